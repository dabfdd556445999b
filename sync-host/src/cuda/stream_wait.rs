//! Gating a stream on a word of memory, with no kernel spinning: the driver's stream
//! memory operations (`cuStreamWaitValue32_v2`/`64_v2`, `cuStreamWriteValue32_v2`/
//! `64_v2`) on a bus word, a [`MappedBuffer`] word or any device address.
//!
//! A kernel that spins on a flag the host sets occupies an SM, and while it runs every
//! driver call that waits for the device's work (`cuMemFree`, `cuMemFreeHost`,
//! `cuCtxSynchronize`) waits for the flag too: a host thread that frees memory before
//! it sets the flag deadlocks (docs/host-device.md has the measured list). A stream
//! wait instead parks the work queued behind it in the GPU's front end, which polls
//! the word; no kernel runs until the condition holds, so nothing waits for it but the
//! stream itself (and, under `CUDA_DEVICE_MAX_CONNECTIONS=1`, the streams sharing its
//! hardware queue: see docs/host-device.md).
//!
//! The V2 entry points need no kernel-module option (the V1 ones needed
//! `NVreg_EnableStreamMemOPs=1`); 64-bit operations need
//! `CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS` and [`WaitCondition::Nor`] needs
//! `CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR`, both checked here. None of the
//! operations takes managed memory (`cuMemAllocManaged`, the driver's documented rule)
//! or memory of a stream-ordered pool (`cuMemAllocAsync`, which the driver refuses with
//! `CUDA_ERROR_INVALID_VALUE`: measured), both checked here too, with their own errors.

use std::fmt;

use cudarc::driver::sys;
use sync_shared::bus::Direction;

use super::{CudaError, MappedBuffer, Placed, Stream};

/// How a stream wait compares the word in memory with its operand (`CUstreamWaitValue_flags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaitCondition {
    /// Until `word - operand`, as a signed integer of the word's width, is `>= 0`: a
    /// cyclic greater-or-equal, which stays right across a wrap of a 32-bit counter as
    /// long as the word is less than 2³¹ past the operand. For a cumulative count (a
    /// handoff semaphore's, which never reaches 2⁶³) it is the plain `>=`.
    /// (`CU_STREAM_WAIT_VALUE_GEQ`.)
    Geq,
    /// Until `word == operand` (`CU_STREAM_WAIT_VALUE_EQ`).
    Equal,
    /// Until `word & operand != 0`: any bit of the operand set in the word
    /// (`CU_STREAM_WAIT_VALUE_AND`).
    And,
    /// Until `!(word | operand) != 0`: some bit clear in both
    /// (`CU_STREAM_WAIT_VALUE_NOR`; needs
    /// `CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR`).
    Nor,
}

impl WaitCondition {
    /// Every condition, for tests and tables.
    pub const ALL: [WaitCondition; 4] = [Self::Geq, Self::Equal, Self::And, Self::Nor];

    /// The driver's flag.
    fn flags(self) -> u32 {
        use sys::CUstreamWaitValue_flags as F;
        (match self {
            Self::Geq => F::CU_STREAM_WAIT_VALUE_GEQ,
            Self::Equal => F::CU_STREAM_WAIT_VALUE_EQ,
            Self::And => F::CU_STREAM_WAIT_VALUE_AND,
            Self::Nor => F::CU_STREAM_WAIT_VALUE_NOR,
        }) as u32
    }

    /// Whether `word` satisfies the condition against `operand` at 32 bits: what the
    /// driver computes, for the host's own checks and the tests.
    pub fn holds32(self, word: u32, operand: u32) -> bool {
        match self {
            Self::Geq => (word.wrapping_sub(operand) as i32) >= 0,
            Self::Equal => word == operand,
            Self::And => word & operand != 0,
            Self::Nor => !(word | operand) != 0,
        }
    }

    /// As [`holds32`](Self::holds32) at 64 bits.
    pub fn holds64(self, word: u64, operand: u64) -> bool {
        match self {
            Self::Geq => (word.wrapping_sub(operand) as i64) >= 0,
            Self::Equal => word == operand,
            Self::And => word & operand != 0,
            Self::Nor => !(word | operand) != 0,
        }
    }
}

/// Why a stream memory operation was not queued.
#[derive(Debug)]
#[non_exhaustive]
pub enum StreamMemOpError {
    /// The device does not offer the operation: `attribute` reads 0.
    Unsupported {
        /// What was asked, e.g. `"a 64-bit stream wait"`.
        operation: &'static str,
        /// The device attribute that says so.
        attribute: &'static str,
    },
    /// The address is not aligned to the word's size.
    Misaligned {
        /// The address passed.
        address: u64,
        /// The alignment the operation needs (4 or 8 bytes).
        alignment: u64,
    },
    /// The address is in managed memory, which no stream memory operation accepts.
    Managed {
        /// The address passed.
        address: u64,
    },
    /// The address is in memory of a stream-ordered pool (`cuMemAllocAsync`, as
    /// [`Runtime::zeros`](super::Runtime::zeros) and
    /// [`Runtime::upload`](super::Runtime::upload) allocate where pools are
    /// supported), which the driver refuses for stream memory operations
    /// (`CUDA_ERROR_INVALID_VALUE`, measured on a Hopper GPU, sm_90, with driver
    /// 580.159.04).
    Pooled {
        /// The address passed.
        address: u64,
    },
    /// A word index past the end of a [`MappedBuffer`].
    OutOfBounds {
        /// The index passed.
        index: usize,
        /// Words of that width in the buffer.
        len: usize,
    },
    /// A driver call failed.
    Cuda(CudaError),
}

impl fmt::Display for StreamMemOpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unsupported {
                operation,
                attribute,
            } => write!(f, "{operation} is not supported by this device ({attribute} = 0)"),
            Self::Misaligned { address, alignment } => write!(
                f,
                "stream memory operation on address {address:#x}: it must be aligned to {alignment} bytes"
            ),
            Self::Managed { address } => write!(
                f,
                "stream memory operation on address {address:#x}: managed memory is not accepted (use mapped memory, Runtime::place_mapped or Runtime::mapped, or device memory)"
            ),
            Self::Pooled { address } => write!(
                f,
                "stream memory operation on address {address:#x}: memory from a stream-ordered pool (cuMemAllocAsync, Runtime::zeros/upload) is refused by the driver (use cuMemAlloc'd device memory or mapped memory)"
            ),
            Self::OutOfBounds { index, len } => write!(
                f,
                "stream memory operation on word {index} of a mapped buffer of {len} such words"
            ),
            Self::Cuda(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for StreamMemOpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Cuda(error) => Some(error),
            _ => None,
        }
    }
}

impl From<CudaError> for StreamMemOpError {
    fn from(error: CudaError) -> Self {
        Self::Cuda(error)
    }
}

/// The byte offset of a [`HandoffSemaphore`](crate::HandoffSemaphore)'s published
/// count within the object (the same on both sides: the layout is `#[repr(C)]`).
fn released_word_offset<D: Direction>(semaphore: &crate::HandoffSemaphore<D>) -> u64 {
    let word = std::ptr::from_ref(semaphore.released_word()) as usize;
    (word - std::ptr::from_ref(semaphore) as usize) as u64
}

const WIDE_OPS: &str = "CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS";
const NOR: &str = "CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR";

/// The width of a stream memory operation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Width {
    Bits32,
    Bits64,
}

impl Stream {
    /// Checks what every stream memory operation needs; binds the context.
    fn check_mem_op(
        &self,
        address: sys::CUdeviceptr,
        width: Width,
        condition: Option<WaitCondition>,
        operation: &'static str,
    ) -> Result<(), StreamMemOpError> {
        let alignment = match width {
            Width::Bits32 => 4,
            Width::Bits64 => 8,
        };
        if address % alignment != 0 {
            return Err(StreamMemOpError::Misaligned { address, alignment });
        }
        self.bind()?;
        let context = self.inner.context();
        let supported = |attribute: sys::CUdevice_attribute| {
            context
                .attribute(attribute)
                .map(|value| value != 0)
                .map_err(CudaError::driver(
                    "read a stream memory operation attribute",
                ))
        };
        use sys::CUdevice_attribute as A;
        if width == Width::Bits64
            && !supported(A::CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS)?
        {
            return Err(StreamMemOpError::Unsupported {
                operation,
                attribute: WIDE_OPS,
            });
        }
        if condition == Some(WaitCondition::Nor)
            && !supported(A::CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR)?
        {
            return Err(StreamMemOpError::Unsupported {
                operation: "a stream wait with WaitCondition::Nor",
                attribute: NOR,
            });
        }
        let mut managed: u32 = 0;
        // SAFETY: the attribute is a 32-bit flag written to a local; the context is
        // bound.
        unsafe {
            sys::cuPointerGetAttribute(
                std::ptr::from_mut(&mut managed).cast(),
                sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_IS_MANAGED,
                address,
            )
        }
        .result()
        .map_err(CudaError::driver(
            "look up the address of a stream memory operation",
        ))?;
        if managed != 0 {
            return Err(StreamMemOpError::Managed { address });
        }
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: the attribute is a pool handle written to a local (null for memory
        // not from a pool); the context is bound.
        let pooled = unsafe {
            sys::cuPointerGetAttribute(
                std::ptr::from_mut(&mut pool).cast(),
                sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
                address,
            )
        };
        // A failed query says nothing about pools: the driver has the last word.
        if pooled == sys::CUresult::CUDA_SUCCESS && !pool.is_null() {
            return Err(StreamMemOpError::Pooled { address });
        }
        Ok(())
    }

    /// Queues a wait on the 32-bit word at `address`: work queued on this stream after
    /// it starts only once the word satisfies `condition` against `value`. Returns at
    /// once; the GPU's front end polls the word, and no kernel runs meanwhile.
    ///
    /// # Ordering
    ///
    /// Work behind the wait starts after a read of the word that satisfied the
    /// condition. What the host wrote to mapped (pinned host) memory before the store
    /// that satisfied it is visible to that work (measured in
    /// `tests/gpu_host_device.rs`); for writes that reach device memory from elsewhere
    /// (a peer, a NIC) the driver offers `CU_STREAM_WAIT_VALUE_FLUSH` on some
    /// platforms, not used here. The driver does not know of the dependency: a stream
    /// that another stream's work must reach first needs an event as well, or the
    /// scheduler may serialize them the wrong way.
    ///
    /// # Errors
    ///
    /// [`StreamMemOpError::Misaligned`] unless `address` is 4-byte aligned,
    /// [`StreamMemOpError::Managed`] for managed memory, [`StreamMemOpError::Pooled`]
    /// for memory of a stream-ordered pool,
    /// [`StreamMemOpError::Unsupported`] for [`WaitCondition::Nor`] on a device without
    /// it, [`StreamMemOpError::Cuda`] if the driver refuses.
    ///
    /// # Safety
    ///
    /// `address` is a device address (device memory from `cuMemAlloc`, or the device
    /// pointer of mapped host memory) that stays allocated until the wait has been satisfied or the
    /// stream's work has been abandoned with the context.
    ///
    /// CUDA counterpart: `cuStreamWaitValue32_v2`.
    pub unsafe fn wait_value32(
        &self,
        address: sys::CUdeviceptr,
        value: u32,
        condition: WaitCondition,
    ) -> Result<(), StreamMemOpError> {
        self.check_mem_op(
            address,
            Width::Bits32,
            Some(condition),
            "a 32-bit stream wait",
        )?;
        // SAFETY: a live stream of the bound context; the caller vouches for the address.
        unsafe { sys::cuStreamWaitValue32_v2(self.raw(), address, value, condition.flags()) }
            .result()
            .map_err(|error| CudaError::driver("queue a 32-bit stream wait")(error).into())
    }

    /// As [`wait_value32`](Self::wait_value32) on a 64-bit word (8-byte aligned).
    ///
    /// # Errors
    ///
    /// As [`wait_value32`](Self::wait_value32), and
    /// [`StreamMemOpError::Unsupported`] on a device without 64-bit stream memory
    /// operations (`CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS`).
    ///
    /// # Safety
    ///
    /// As [`wait_value32`](Self::wait_value32).
    ///
    /// CUDA counterpart: `cuStreamWaitValue64_v2`.
    pub unsafe fn wait_value64(
        &self,
        address: sys::CUdeviceptr,
        value: u64,
        condition: WaitCondition,
    ) -> Result<(), StreamMemOpError> {
        self.check_mem_op(
            address,
            Width::Bits64,
            Some(condition),
            "a 64-bit stream wait",
        )?;
        // SAFETY: as in `wait_value32`.
        unsafe { sys::cuStreamWaitValue64_v2(self.raw(), address, value, condition.flags()) }
            .result()
            .map_err(|error| CudaError::driver("queue a 64-bit stream wait")(error).into())
    }

    /// Queues a store of `value` to the 32-bit word at `address`, done when the work
    /// queued before it on this stream has finished.
    ///
    /// # Ordering
    ///
    /// The driver fences before the store (like `__threadfence_system()`, scoped to the
    /// stream): the writes of the earlier work are visible to whoever sees the value.
    ///
    /// # Errors
    ///
    /// As [`wait_value32`](Self::wait_value32).
    ///
    /// # Safety
    ///
    /// `address` is a device address of a live allocation that nothing else uses as
    /// anything but this word until the store is done.
    ///
    /// CUDA counterpart: `cuStreamWriteValue32_v2` (default flags).
    pub unsafe fn write_value32(
        &self,
        address: sys::CUdeviceptr,
        value: u32,
    ) -> Result<(), StreamMemOpError> {
        self.check_mem_op(address, Width::Bits32, None, "a 32-bit stream write")?;
        let flags = sys::CUstreamWriteValue_flags::CU_STREAM_WRITE_VALUE_DEFAULT as u32;
        // SAFETY: a live stream of the bound context; the caller vouches for the address.
        unsafe { sys::cuStreamWriteValue32_v2(self.raw(), address, value, flags) }
            .result()
            .map_err(|error| CudaError::driver("queue a 32-bit stream write")(error).into())
    }

    /// As [`write_value32`](Self::write_value32) on a 64-bit word (8-byte aligned).
    ///
    /// # Errors
    ///
    /// As [`wait_value64`](Self::wait_value64).
    ///
    /// # Safety
    ///
    /// As [`write_value32`](Self::write_value32).
    ///
    /// CUDA counterpart: `cuStreamWriteValue64_v2` (default flags).
    pub unsafe fn write_value64(
        &self,
        address: sys::CUdeviceptr,
        value: u64,
    ) -> Result<(), StreamMemOpError> {
        self.check_mem_op(address, Width::Bits64, None, "a 64-bit stream write")?;
        let flags = sys::CUstreamWriteValue_flags::CU_STREAM_WRITE_VALUE_DEFAULT as u32;
        // SAFETY: as in `write_value32`.
        unsafe { sys::cuStreamWriteValue64_v2(self.raw(), address, value, flags) }
            .result()
            .map_err(|error| CudaError::driver("queue a 64-bit stream write")(error).into())
    }

    /// Queues a wait until `semaphore` has released `count` units in all (its
    /// [`released`](sync_shared::bus::HandoffSemaphore::released) count, initial units
    /// included, reaches `count`): work queued on this stream behind it starts once the
    /// producer has published unit `count - 1`, with no kernel spinning meanwhile.
    ///
    /// The units are not acquired: the wait only reads the published count, so it
    /// suits a semaphore whose consumer is the gated work itself (unit `k` gates the
    /// `k`-th launch), or one whose units nobody acquires.
    ///
    /// # Ordering
    ///
    /// As a consumer's acquire of unit `count - 1`: what the producer wrote to mapped
    /// memory before releasing it is visible to the work behind the wait.
    ///
    /// # Errors
    ///
    /// [`StreamMemOpError::Managed`] for a semaphore placed in managed memory,
    /// [`StreamMemOpError::Unsupported`] on a device without 64-bit stream memory
    /// operations, [`StreamMemOpError::Cuda`] if the driver refuses.
    ///
    /// # Examples
    ///
    /// Three launches, each of which starts once the host has released its unit, with
    /// no kernel waiting on the GPU meanwhile (`consume(slots, unit)` reads the
    /// payload the host wrote to slot `unit`):
    ///
    /// ```no_run
    /// use sync_host::cuda::{KernelArgs, LaunchConfig, Runtime};
    /// use sync_host::{HandoffSemaphore, HostToGpu};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let runtime = Runtime::open(0)?;
    /// let work = runtime.place_mapped(HandoffSemaphore::<HostToGpu>::new(0))?;
    /// let payload = runtime.mapped(16)?; // 8 u64 slots
    /// let consume = runtime.load_file("my-kernels.ptx")?.kernel("consume")?;
    /// let stream = runtime.new_stream()?;
    /// for unit in 0..3_u64 {
    ///     // Launch `unit` starts once unit `unit` is released (the count reaches unit + 1).
    ///     stream.wait_released(&work, unit + 1)?;
    ///     let args = KernelArgs::new().arg(&payload).arg(unit);
    ///     // SAFETY: `consume(*const u64, u64)`; the buffer outlives it (its drop waits for
    ///     // the context's work).
    ///     unsafe { consume.launch(LaunchConfig::new(1, 32).on(&stream), args) }?;
    /// }
    /// // Later, on any host thread: no kernel runs until the first release.
    /// for unit in 0..3_u64 {
    ///     payload.write_u64(unit as usize, unit * 10); // visible to launch `unit`
    ///     work.release(1);
    /// }
    /// stream.synchronize()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// CUDA counterpart: `cuStreamWaitValue64_v2` with `CU_STREAM_WAIT_VALUE_GEQ` on
    /// the published count.
    pub fn wait_released<D: Direction>(
        &self,
        semaphore: &Placed<'_, crate::HandoffSemaphore<D>>,
        count: u64,
    ) -> Result<(), StreamMemOpError> {
        if !semaphore.is_mapped() {
            return Err(StreamMemOpError::Managed {
                address: semaphore.device_address(),
            });
        }
        let address = semaphore.device_address() + released_word_offset(semaphore);
        // SAFETY: the semaphore's published count, in mapped memory whose owner's drop
        // waits for the context's work (this wait included) before freeing it.
        unsafe { self.wait_value64(address, count, WaitCondition::Geq) }
    }

    /// Queues a wait on 32-bit word `index` of `buffer`, as
    /// [`wait_value32`](Self::wait_value32); the host sets the word with
    /// [`MappedBuffer::host_words`].
    ///
    /// # Errors
    ///
    /// [`StreamMemOpError::OutOfBounds`] for an index past the buffer, else as
    /// [`wait_value32`](Self::wait_value32).
    ///
    /// CUDA counterpart: `cuStreamWaitValue32_v2`.
    pub fn wait_mapped_u32(
        &self,
        buffer: &MappedBuffer<'_>,
        index: usize,
        value: u32,
        condition: WaitCondition,
    ) -> Result<(), StreamMemOpError> {
        let address = word_address(buffer, index, 4)?;
        // SAFETY: a word of mapped memory whose drop waits for the context's work.
        unsafe { self.wait_value32(address, value, condition) }
    }

    /// Queues a wait on 64-bit word `index` of `buffer` (words `2 index` and
    /// `2 index + 1`, as [`MappedBuffer::read_u64`]), as
    /// [`wait_value64`](Self::wait_value64).
    ///
    /// # Errors
    ///
    /// As [`wait_mapped_u32`](Self::wait_mapped_u32) and
    /// [`wait_value64`](Self::wait_value64).
    ///
    /// CUDA counterpart: `cuStreamWaitValue64_v2`.
    pub fn wait_mapped_u64(
        &self,
        buffer: &MappedBuffer<'_>,
        index: usize,
        value: u64,
        condition: WaitCondition,
    ) -> Result<(), StreamMemOpError> {
        let address = word_address(buffer, index, 8)?;
        // SAFETY: as in `wait_mapped_u32`.
        unsafe { self.wait_value64(address, value, condition) }
    }

    /// Queues a store of `value` to 32-bit word `index` of `buffer` after the work
    /// queued before it, as [`write_value32`](Self::write_value32).
    ///
    /// # Errors
    ///
    /// As [`wait_mapped_u32`](Self::wait_mapped_u32).
    ///
    /// CUDA counterpart: `cuStreamWriteValue32_v2`.
    pub fn write_mapped_u32(
        &self,
        buffer: &MappedBuffer<'_>,
        index: usize,
        value: u32,
    ) -> Result<(), StreamMemOpError> {
        let address = word_address(buffer, index, 4)?;
        // SAFETY: a word of mapped memory whose drop waits for the context's work; the
        // host reads it atomically.
        unsafe { self.write_value32(address, value) }
    }

    /// Queues a store of `value` to 64-bit word `index` of `buffer`, as
    /// [`write_value64`](Self::write_value64).
    ///
    /// # Errors
    ///
    /// As [`wait_mapped_u64`](Self::wait_mapped_u64).
    ///
    /// CUDA counterpart: `cuStreamWriteValue64_v2`.
    pub fn write_mapped_u64(
        &self,
        buffer: &MappedBuffer<'_>,
        index: usize,
        value: u64,
    ) -> Result<(), StreamMemOpError> {
        let address = word_address(buffer, index, 8)?;
        // SAFETY: as in `write_mapped_u32`.
        unsafe { self.write_value64(address, value) }
    }
}

/// The device address of word `index` of `bytes` bytes in `buffer`.
fn word_address(
    buffer: &MappedBuffer<'_>,
    index: usize,
    bytes: usize,
) -> Result<sys::CUdeviceptr, StreamMemOpError> {
    let len = buffer.len() * 4 / bytes;
    if index >= len {
        return Err(StreamMemOpError::OutOfBounds { index, len });
    }
    Ok(buffer.device_address() + (index * bytes) as u64)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::{HandoffSemaphore, HostToGpu};

    #[test]
    fn the_published_count_is_the_word_at_the_offset() {
        // An exclusive producer marks its side word and stores the count to the
        // published word only: the word at the offset must follow the releases.
        let semaphore = HandoffSemaphore::<HostToGpu>::new(0);
        let base = std::ptr::from_ref(&semaphore).cast::<u8>();
        let offset = released_word_offset(&semaphore) as usize;
        assert_eq!(offset % 8, 0, "an aligned 64-bit word");
        assert!(
            offset + 8 <= std::mem::size_of_val(&semaphore),
            "inside the object"
        );
        // SAFETY: the offset is inside the object, 8-byte aligned (checked above), and
        // the words there are atomics (loads only).
        let word = unsafe { &*base.add(offset).cast::<std::sync::atomic::AtomicU64>() };
        let mut producer = semaphore.producer().unwrap();
        for released in 1..=3 {
            producer.release(1);
            assert_eq!(
                word.load(std::sync::atomic::Ordering::Acquire),
                released,
                "the published count"
            );
        }
        drop(producer);
        assert_eq!(semaphore.released(), 3);
    }

    #[test]
    fn conditions_follow_the_drivers_definitions() {
        use WaitCondition::*;
        // Cyclic: just past a wrap is still "at least".
        assert!(Geq.holds32(5, 5) && Geq.holds32(6, 5) && !Geq.holds32(4, 5));
        assert!(Geq.holds32(0x10, 0xFFFF_FFF0), "past the wrap");
        assert!(!Geq.holds32(0xFFFF_FFF0, 0x10), "before the wrap");
        assert!(Geq.holds64(1 << 62, 0) && !Geq.holds64(0, 1));
        assert!(Equal.holds32(7, 7) && !Equal.holds32(7, 8));
        assert!(And.holds32(0b1010, 0b0010) && !And.holds32(0b1010, 0b0101));
        assert!(
            Nor.holds32(0b1010, 0b0101),
            "bits 4 and up are clear in both"
        );
        assert!(!Nor.holds32(u32::MAX, 0) && !Nor.holds32(0, u32::MAX));
        assert!(!Nor.holds32(0xFFFF_0000, 0x0000_FFFF));
        assert!(
            Nor.holds64(0xFFFF_0000, 0x0000_FFFF),
            "the upper half is clear"
        );
        let flags: Vec<u32> = WaitCondition::ALL.iter().map(|c| c.flags()).collect();
        assert_eq!(flags, [0, 1, 2, 3]);
    }

    #[test]
    fn errors_name_the_rule() {
        let text = StreamMemOpError::Unsupported {
            operation: "a 64-bit stream wait",
            attribute: WIDE_OPS,
        }
        .to_string();
        assert!(text.contains("CAN_USE_64_BIT_STREAM_MEM_OPS"), "{text}");
        let text = StreamMemOpError::Misaligned {
            address: 0x1002,
            alignment: 4,
        }
        .to_string();
        assert!(
            text.contains("0x1002") && text.contains("4 bytes"),
            "{text}"
        );
        let text = StreamMemOpError::Managed { address: 0x2000 }.to_string();
        assert!(text.contains("managed"), "{text}");
        let text = StreamMemOpError::Pooled { address: 0x3000 }.to_string();
        assert!(text.contains("cuMemAllocAsync"), "{text}");
    }
}
