//! [`SideLine`]: a side word on its own line, and where the GPU finds the word it
//! read-modify-writes in its place.

use super::BusWord;
use crate::primitive::{const_fn, Ordering};

/// A side word alone on its 64-byte line, beside the device address of the word that
/// GPU threads read-modify-write instead of it.
///
/// A bus object usually lies in pinned mapped host memory, where a GPU's
/// read-modify-write crosses PCIe and is not atomic for the host (machines with
/// `hostNativeAtomicSupported = 0`): the bus promise is that the GPU only loads and
/// stores there. So the GPU never read-modify-writes `word` of a line in mapped memory;
/// when the runtime places the object, it attaches to each of the GPU's lines
/// ([`GpuSideLines`]) the word in GPU memory it uses: the address of a fresh word in
/// device memory holding the line's value for an object in mapped memory;
/// [`ITS_OWN_WORD`] for an object in device, managed or peer memory, where the line's
/// own word is the GPU's (a mark, not an address: the object then reads the same at
/// any address, so processes that map it at different addresses share it). For an
/// object in NVSHMEM's symmetric heap, where each PE has its own copy, the line also
/// says where the GPU side's bus stores go besides ([`Crossing`]). Host threads use
/// `word`.
///
/// A GPU thread that finds no address attached traps: the object was not placed by the
/// runtime (built by hand in mapped memory, say), and nothing tells where its GPU words
/// may live.
#[repr(C, align(64))]
pub struct SideLine {
    /// The side word itself (the host's; the GPU's too where the object lies in GPU
    /// memory and `gpu_word` holds [`ITS_OWN_WORD`]).
    word: BusWord,
    /// Device address of the word GPU threads use, or [`ITS_OWN_WORD`]; 0 until the
    /// runtime attaches one.
    gpu_word: BusWord,
    /// Where the GPU side's bus stores go besides the object ([`Crossing`], tagged);
    /// 0 for none. In the line's padding, so no object grows.
    crossing: BusWord,
}

/// [`SideLine::gpu_word`] of a line whose own word GPU threads use (an object in memory
/// the GPU may read-modify-write). No word lies at address 1 (words are 8-byte aligned).
pub const ITS_OWN_WORD: u64 = 1;

/// The low bits of [`SideLine::crossing`]'s word that say which [`Crossing`] it holds
/// (0: none).
const CROSSING_TAG: u64 = 0xff;
/// Tag of a crossing whose bits above [`PE_SHIFT`] name the PE that this side's
/// published count also goes to (a handoff's producing PE, in NVSHMEM's symmetric heap).
const TAG_TO_PE: u64 = 1;
/// Tag of a crossing whose bits above [`PE_SHIFT`] are the number of PEs that this
/// side's stop requests go to (a stop source in NVSHMEM's symmetric heap).
const TAG_TO_EVERY_PE: u64 = 2;
/// Where a crossing keeps its PE number or count.
const PE_SHIFT: u32 = 8;

/// Where a GPU side's bus stores go besides the object's own word (see
/// [`SideLine::crossing`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Crossing {
    /// Nowhere else: the other side reads this very object (mapped, device, managed or
    /// peer memory).
    None,
    /// Also to PE `n`'s copy of the object, through NVSHMEM (the object lies in
    /// NVSHMEM's symmetric heap and the other side runs on PE `n`).
    ToPe(u32),
    /// Also to the copies of every PE of `0..n`, through NVSHMEM.
    ToEveryPe(u32),
}

impl SideLine {
    const_fn! {
        pub(crate) fn new(value: u64) -> Self {
            Self {
                word: BusWord::new(value),
                gpu_word: BusWord::new(0),
                crossing: BusWord::new(0),
            }
        }
    }

    /// The line's own word (host threads read-modify-write it).
    #[inline(always)]
    pub fn word(&self) -> &BusWord {
        &self.word
    }

    /// The device address of the word GPU threads use in this line's place,
    /// [`ITS_OWN_WORD`] for the line's own, or 0 if the runtime attached none.
    ///
    /// A plain load: the address is written by the host before any kernel uses the
    /// object and does not change while kernels run.
    #[inline(always)]
    pub fn gpu_word(&self) -> u64 {
        self.gpu_word.load(Ordering::Relaxed)
    }

    /// The word GPU threads use in this line's place: the one at the attached address.
    ///
    /// # Panics
    ///
    /// (A trap on the device.) If the runtime attached none: the object was not placed
    /// by the runtime, so its GPU side has no word it may read-modify-write.
    #[inline(always)]
    pub fn attached_gpu_word(&self) -> &BusWord {
        let address = self.gpu_word();
        if address == ITS_OWN_WORD {
            return &self.word;
        }
        if address == 0 {
            not_placed();
        }
        // SAFETY: a nonzero address was attached with `attach_gpu_word`, whose contract
        // makes it a live, aligned word for as long as kernels use the object.
        unsafe { &*(address as usize as *const BusWord) }
    }

    /// Where this GPU side's bus stores go besides the object's own word: what the
    /// runtime attached to the line of an object in NVSHMEM's symmetric heap, whose
    /// other side reads another PE's copy. A plain load, as [`gpu_word`](Self::gpu_word).
    #[inline(always)]
    pub fn crossing(&self) -> Crossing {
        let mark = self.crossing.load(Ordering::Relaxed);
        let pe = (mark >> PE_SHIFT) as u32;
        match mark & CROSSING_TAG {
            TAG_TO_PE => Crossing::ToPe(pe),
            TAG_TO_EVERY_PE => Crossing::ToEveryPe(pe),
            _ => Crossing::None,
        }
    }

    /// Tells GPU threads to use the line's own word, and to send this side's bus stores
    /// by `crossing` as well.
    ///
    /// # Safety
    ///
    /// As [`attach_gpu_word`](Self::attach_gpu_word) with [`ITS_OWN_WORD`]; for a
    /// crossing other than [`Crossing::None`], the object lies in NVSHMEM's symmetric
    /// heap (every PE named has a copy at the same offset) and the kernels that use it
    /// were linked with NVSHMEM's device library.
    pub unsafe fn attach_own_word_crossing(&self, crossing: Crossing) {
        let mark = match crossing {
            Crossing::None => 0,
            Crossing::ToPe(pe) => (u64::from(pe) << PE_SHIFT) | TAG_TO_PE,
            Crossing::ToEveryPe(pes) => (u64::from(pes) << PE_SHIFT) | TAG_TO_EVERY_PE,
        };
        self.crossing.store(mark, Ordering::Relaxed);
        // SAFETY: the caller's contract.
        unsafe { self.attach_gpu_word(ITS_OWN_WORD) };
    }

    /// Tells GPU threads to use the word at device address `address` in this line's
    /// place.
    ///
    /// # Safety
    ///
    /// From now on, while any kernel may use the object, `address` is
    /// [`ITS_OWN_WORD`] for an object in such memory as below, or the device address
    /// of a live, 8-byte aligned word that holds the line's count and that the
    /// GPU threads using the object may read-modify-write atomically with device-scope
    /// atomics (and with system-scope ones among several GPUs, for a stop source's
    /// claim): device memory, managed memory or a peer's memory reached with native
    /// atomics, never pinned host memory. No kernel uses the object while it changes.
    pub unsafe fn attach_gpu_word(&self, address: u64) {
        self.gpu_word.store(address, Ordering::Relaxed);
    }
}

/// A bus object's side lines whose words GPU threads read-modify-write (at most two):
/// the runtime attaches a GPU word to each when it places the object (see
/// [`SideLine`]).
///
/// # Safety
///
/// The lines returned are fields of `self` (so that their offsets in the object are
/// fixed), and every side word a GPU thread read-modify-writes is the word of one of
/// them.
pub unsafe trait GpuSideLines {
    /// The GPU's side lines of this object.
    fn gpu_side_lines(&self) -> [Option<&SideLine>; 2];

    /// Attaches to each of the GPU's lines its own word ([`ITS_OWN_WORD`]), for an
    /// object that lies in memory whose words the GPU may read-modify-write (device,
    /// managed or peer memory with native atomics), at whatever address each user maps
    /// it.
    ///
    /// # Safety
    ///
    /// `self` is the host's copy of the bytes that lie (or will lie, before any kernel
    /// uses them) in such memory, and stay there while kernels use them.
    unsafe fn attach_own_words(&self) {
        for line in self.gpu_side_lines().into_iter().flatten() {
            // SAFETY: the line's own word lies in memory the GPU may read-modify-write
            // (the caller's contract).
            unsafe { line.attach_gpu_word(ITS_OWN_WORD) };
        }
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn not_placed() -> ! {
    super::misuse(
        "bus object on the GPU",
        "the object was not placed by the runtime (Runtime::place_mapped, place_managed, \
         place_for_peers or upload_object), so its GPU side words have no home",
    )
}
