//! Bus objects in NVSHMEM's symmetric heap ([`SymmetricObject`]): a
//! `HandoffSemaphore<GpuToGpu>` between the kernels of two PEs and a `BusStopSource`
//! for the kernels of every PE, which cross through NVSHMEM's device operations, so
//! that the PEs need not reach each other's memory (another machine).
//!
//! Each PE has its own copy of the object, at the same offset of its heap. A side that
//! publishes a count stores it in its own copy and sends it to the other side's copy
//! with NVSHMEM's signal set (after a fence, which delivers the data the side put
//! before); the other side polls its own copy. The runtime marks, in each PE's copy,
//! where its GPU's stores go (`sync_shared::bus::Crossing`); the kernels that use the
//! object come from a crate built with sync-device's `nvshmem` feature, loaded with
//! [`Nvshmem::load`].

use std::marker::PhantomData;

use cudarc::driver::sys;
use sync_shared::bus::{Crossing, GpuSideLines};

use super::{Nvshmem, SymmetricMemory};
use crate::cuda::runtime::device_bytes_with;
use crate::cuda::{CudaError, DeviceObject};
use crate::{BusStopSource, GpuToGpu, HandoffSemaphore};

/// A bus object in NVSHMEM's symmetric heap ([`Nvshmem::handoff`],
/// [`Nvshmem::stop_source`]): kernels of this PE take
/// [`device_address`](Self::device_address) as a pointer to the device flavour.
/// Dropping it frees it collectively, as [`SymmetricMemory`].
pub struct SymmetricObject<T> {
    memory: SymmetricMemory,
    _object: PhantomData<fn() -> T>,
}

impl<T> SymmetricObject<T> {
    /// This PE's copy, at the address this process's kernels use.
    pub fn device_address(&self) -> sys::CUdeviceptr {
        self.memory.device_address()
    }
}

impl<T> std::fmt::Debug for SymmetricObject<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymmetricObject")
            .field("object", &std::any::type_name::<T>())
            .field("memory", &self.memory)
            .finish()
    }
}

impl Nvshmem {
    /// A `HandoffSemaphore<GpuToGpu>` holding `initial` units, from the kernels of PE
    /// `producer` to those of PE `consumer`, in NVSHMEM's symmetric heap. Collective:
    /// every process calls it with the same arguments, in the same order as its other
    /// collectives; it returns once every PE's copy is in place.
    ///
    /// PE `producer`'s threads release (shared or through one `Producer`), PE
    /// `consumer`'s acquire, each on its own copy (the pointer
    /// [`device_address`](SymmetricObject::device_address)); no other PE uses it. A
    /// release sends the count to the consumer's copy with NVSHMEM's signal set, after
    /// a fence: payloads the producer wrote to the consumer's PE before it, with
    /// `sync_device::nvshmem::put_u64`/`put` or stores through `nvshmem_ptr`, are
    /// there when the consumer acquires the unit. A `Producer` sends one signal per
    /// release; a shared release also waits until its signal is delivered, so that the
    /// next releaser's count cannot overtake it.
    ///
    /// Counterpart: `nvshmem_putmem_signal` with `NVSHMEM_SIGNAL_SET` into a ring the
    /// consumer polls with `nvshmem_signal_wait_until`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use sync_host::cuda::{EmbeddedModule, KernelArgs, LaunchConfig, Nvshmem};
    ///
    /// // A ring of 64 payload words in every PE, PE 0's kernel producing for PE 1's.
    /// fn pipeline(shmem: &Nvshmem, kernels: &EmbeddedModule) -> Result<(), Box<dyn std::error::Error>> {
    ///     let work = shmem.handoff(0, 0, 1)?;
    ///     let credits = shmem.handoff(64, 1, 0)?;
    ///     let ring = shmem.zeros(64 * 8)?;
    ///     let module = shmem.load(kernels)?;
    ///     let name = if shmem.pe() == 0 { "produce" } else { "consume" };
    ///     let args = KernelArgs::new()
    ///         .arg(work.device_address())
    ///         .arg(credits.device_address())
    ///         .arg(ring.device_address());
    ///     // SAFETY: `produce`/`consume(work, credits, ring)`, one thread each.
    ///     unsafe { module.kernel(name)?.launch(LaunchConfig::new(1, 32), args) }?;
    ///     shmem.gpu().synchronize()?;
    ///     Ok(())
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`zeros`](Self::zeros), and a failed copy to the GPU.
    ///
    /// # Panics
    ///
    /// If `producer` or `consumer` is not a PE of the job.
    pub fn handoff(
        &self,
        initial: u64,
        producer: usize,
        consumer: usize,
    ) -> Result<SymmetricObject<HandoffSemaphore<GpuToGpu>>, CudaError> {
        for (end, pe) in [("producer", producer), ("consumer", consumer)] {
            assert!(
                pe < self.pes(),
                "Nvshmem::handoff: the {end} is PE {pe} of {}",
                self.pes()
            );
        }
        let crossing = if self.pe() == producer && producer != consumer {
            Crossing::ToPe(pe_number(consumer))
        } else {
            Crossing::None
        };
        self.place(&HandoffSemaphore::new(initial), crossing)
    }

    /// A `BusStopSource` for the kernels of every PE, in NVSHMEM's symmetric heap:
    /// a kernel's request reaches every PE's copy (NVSHMEM's signal set to each, after
    /// a fence, delivered before `request_stop` returns), and of all the kernels'
    /// requests exactly one returns `true` (a compare-and-swap on PE 0's copy of the
    /// claim). The copies lie in GPU memory, which host threads do not reach: a host
    /// stops the job through a kernel (one that waits on a `BusStopSource` in mapped
    /// memory and forwards the request, say). Collective, as [`handoff`](Self::handoff).
    ///
    /// # Errors
    ///
    /// As [`handoff`](Self::handoff).
    pub fn stop_source(&self) -> Result<SymmetricObject<BusStopSource>, CudaError> {
        self.place(
            &BusStopSource::new(),
            Crossing::ToEveryPe(pe_number(self.pes())),
        )
    }

    /// Places `object` in the symmetric heap, every GPU side line of this PE's copy
    /// marked with its own word and `crossing` for the first line (the GPU's publishing
    /// line: a handoff's producer, a stop source's claim).
    fn place<T: DeviceObject + GpuSideLines>(
        &self,
        object: &T,
        crossing: Crossing,
    ) -> Result<SymmetricObject<T>, CudaError> {
        let memory = self.zeros(size_of::<T>())?;
        assert_eq!(
            memory.device_address() % align_of::<T>() as u64,
            0,
            "NVSHMEM's allocation is not aligned for a bus object"
        );
        let bytes = device_bytes_with(object, |copy| {
            let [publishing, other] = copy.gpu_side_lines();
            // SAFETY: the copy's bytes go to this PE's part of the symmetric heap (GPU
            // memory, where the GPU's atomics are atomic) before any kernel uses them;
            // the crossing's PEs all have a copy at the same offset, and kernels that
            // use it are loaded with `Nvshmem::load` (the object's contract).
            unsafe {
                if let Some(line) = publishing {
                    line.attach_own_word_crossing(crossing);
                }
                if let Some(line) = other {
                    line.attach_own_word_crossing(Crossing::None);
                }
            }
        });
        let started = &self.started;
        started.gpu.bind()?;
        // SAFETY: this PE's part of the fresh allocation holds `size_of::<T>()` bytes;
        // no kernel uses it yet.
        unsafe {
            sys::cuMemcpyHtoD_v2(memory.device_address(), bytes.as_ptr().cast(), bytes.len())
        }
        .result()
        .map_err(CudaError::driver("copy a bus object to symmetric memory"))?;
        // No PE's kernel may send to a copy before it is written: meet once all are.
        started
            .group
            .all_gather_as(
                &format!("NVSHMEM {} placed", std::any::type_name::<T>()),
                &[],
                &[],
            )
            .map_err(CudaError::ProcessGroup)?;
        Ok(SymmetricObject {
            memory,
            _object: PhantomData,
        })
    }
}

fn pe_number(pe: usize) -> u32 {
    u32::try_from(pe).expect("a PE number fits 32 bits")
}
