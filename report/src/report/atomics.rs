//! The cost of one scoped atomic operation or fence, at any scope of any backend.
//!
//! Every operation runs in a loop where each iteration depends on the previous one's
//! result (the loaded value picks the next word, the compare-exchange expects what the
//! last one wrote), so the figure is the latency of one operation, not the throughput
//! of many in flight, the way the GPU anchors measure `atom` and `fence`. Stores return
//! nothing to depend on; they run back to back.
//!
//! This file is shared: the report binary declares it as `report::atomics`, and
//! `benches/host.rs` includes it with `#[path]`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use scoped_sync::backend::Word;
use scoped_sync::{Backend, Ordering, Scope};

/// One atomic operation or fence, with its memory ordering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    /// `load(order)`.
    Load(Ordering),
    /// `store(order)`.
    Store(Ordering),
    /// `fetch_add(1, order)`.
    FetchAdd(Ordering),
    /// Strong `compare_exchange(current, current + 1, order, failure)` that succeeds;
    /// the failure ordering is the strongest one allowed for `order`.
    CompareExchange(Ordering),
    /// A lone `fence(order)`.
    Fence(Ordering),
    /// A relaxed store followed by a sequentially consistent fence: the pattern
    /// that publishes a flag across scopes (and the GPU anchors' "store + fence").
    StoreRelaxedFenceSeqCst,
}

/// Every operation the backend contract offers, at every ordering it accepts.
pub const ALL: &[AtomicOp] = {
    use AtomicOp::*;
    use Ordering::*;
    &[
        Load(Relaxed),
        Load(Acquire),
        Load(SeqCst),
        Store(Relaxed),
        Store(Release),
        Store(SeqCst),
        FetchAdd(Relaxed),
        FetchAdd(Acquire),
        FetchAdd(Release),
        FetchAdd(AcqRel),
        FetchAdd(SeqCst),
        CompareExchange(Relaxed),
        CompareExchange(Acquire),
        CompareExchange(Release),
        CompareExchange(AcqRel),
        CompareExchange(SeqCst),
        Fence(Acquire),
        Fence(Release),
        Fence(AcqRel),
        Fence(SeqCst),
        StoreRelaxedFenceSeqCst,
    ]
};

impl AtomicOp {
    /// The report's `primitive` column: `"atomic"` or `"fence"`.
    pub fn primitive(self) -> &'static str {
        match self {
            Self::Fence(_) | Self::StoreRelaxedFenceSeqCst => "fence",
            _ => "atomic",
        }
    }

    /// The report's `op` column, e.g. `"fetch_add_acq_rel"`.
    pub fn name(self) -> String {
        match self {
            Self::Load(order) => format!("load_{}", order_name(order)),
            Self::Store(order) => format!("store_{}", order_name(order)),
            Self::FetchAdd(order) => format!("fetch_add_{}", order_name(order)),
            Self::CompareExchange(order) => format!("compare_exchange_{}", order_name(order)),
            Self::Fence(order) => format!("fence_{}", order_name(order)),
            Self::StoreRelaxedFenceSeqCst => "store_relaxed_fence_seq_cst".to_owned(),
        }
    }

    /// Runs the operation `iterations` times at scope `S` of backend `B`; returns the
    /// wall time.
    pub fn run<S: Scope, B: Backend<S>>(self, iterations: u64) -> Duration {
        // Two words, both 0: `words[value & 1]` is always `words[0]` for a load, but
        // the compiler cannot know it, so the next access waits for this one's value.
        let words = [Word::new(0), Word::new(0)];
        let words = black_box(&words);
        let start = Instant::now();
        let last = match self {
            Self::Load(order) => {
                let mut value = 0;
                for _ in 0..iterations {
                    value = B::load(&words[(value & 1) as usize], order);
                }
                value
            }
            Self::Store(order) => {
                for i in 0..iterations {
                    B::store(&words[0], i as u32, order);
                }
                0
            }
            Self::FetchAdd(order) => {
                let mut value = 0;
                for _ in 0..iterations {
                    value = B::fetch_add(&words[(value & 1) as usize], 1, order);
                }
                value
            }
            Self::CompareExchange(order) => {
                let mut current = 0_u32;
                for _ in 0..iterations {
                    let next = current.wrapping_add(1);
                    current = match B::compare_exchange(
                        &words[0],
                        current,
                        next,
                        order,
                        failure_order(order),
                    ) {
                        Ok(_) => next,
                        Err(actual) => actual,
                    };
                }
                current
            }
            Self::Fence(order) => {
                for i in 0..iterations {
                    B::fence(order);
                    // Opaque to the compiler, which would otherwise merge a run of
                    // fences with nothing between them into one.
                    black_box(i);
                }
                0
            }
            Self::StoreRelaxedFenceSeqCst => {
                for i in 0..iterations {
                    B::store(&words[0], i as u32, Ordering::Relaxed);
                    B::fence(Ordering::SeqCst);
                }
                0
            }
        };
        let elapsed = start.elapsed();
        black_box(last);
        elapsed
    }
}

/// `relaxed`, `acquire`, `release`, `acq_rel` or `seq_cst`, as C++ and PTX spell them.
fn order_name(order: Ordering) -> &'static str {
    match order {
        Ordering::Relaxed => "relaxed",
        Ordering::Acquire => "acquire",
        Ordering::Release => "release",
        Ordering::AcqRel => "acq_rel",
        Ordering::SeqCst => "seq_cst",
        // `Ordering` is non-exhaustive; a new one would get a name here.
        _ => "unknown",
    }
}

/// The strongest failure ordering `compare_exchange` accepts with success `order`.
fn failure_order(order: Ordering) -> Ordering {
    match order {
        Ordering::Acquire | Ordering::AcqRel => Ordering::Acquire,
        Ordering::SeqCst => Ordering::SeqCst,
        _ => Ordering::Relaxed,
    }
}
