//! The host–device failure modes that users of other libraries hit, as tests (the
//! guarantees are in docs/host-device.md):
//!
//! - a kernel waiting on a flag the host sets made a `cudaFree` elsewhere in the
//!   process wait for it, a deadlock when the host frees before it sets the flag
//!   (ml-explore/mlx issues 2137, 2229, 2231): which driver calls wait for a kernel
//!   that waits on a `HostToGpu` semaphore, and that none of them deadlocks once the
//!   kernel is released;
//! - a flag the host set in managed memory was read stale by the kernel: a host-set
//!   flag reaches a waiting kernel in every placement the runtime offers;
//! - gating a stream on a bus word instead of spinning a kernel
//!   ([`Stream::wait_released`] and the other stream memory operations).
//!
//! Without a CUDA driver every test prints "skipped: no CUDA driver" and passes. The
//! kernels the host feeds are launched from a helper thread
//! ([`launch_beside`](scoped_sync::cuda::Kernel::launch_beside)), so the tests also run
//! where launches block (`CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_LAUNCH_BLOCKING=1`); what
//! the driver does differs there, and the tests assert each mode's documented behaviour.

mod common;

use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::hang_guard;
use harness::host_device::{flag_round_trips, FlagPlacement};
use harness::Gpu;
use scoped_sync::cuda::beside::Beside;
use scoped_sync::cuda::cudarc::driver::sys;
use scoped_sync::cuda::{
    HostWait, KernelArgs, LaunchConfig, MappedBuffer, Module, Stream, StreamMemOpError,
    WaitCondition,
};
use scoped_sync::{BusWait, HandoffSemaphore, HostToGpu};

/// A driver call that has not returned after this is taken for one that waits for the
/// kernel: the test then releases the kernel.
const BOUND: Duration = Duration::from_secs(2);
/// After the release, a call that still has not returned after this is a deadlock.
const DEADLOCK: Duration = Duration::from_secs(60);
/// How long the test kernels wait for the host before they give up (a failure).
const KERNEL_PATIENCE: Duration = Duration::from_secs(60);
/// Every host wait of these tests gives up after this (a failure, not a hang).
const PATIENCE: Duration = Duration::from_secs(20);

/// What `hd_wait_handoff` writes to its outcome word when it acquired its unit.
const ACQUIRED: u32 = 1;

/// Held by each test while it runs: the classifications need the process's GPU work
/// to themselves (a `cuCtxSynchronize` elsewhere would wait for their kernel, and
/// another test's kernel for theirs), also when libtest runs tests in parallel.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The GPU and this file's lock, or `None` without a CUDA driver.
fn runtime() -> Option<(Gpu, MutexGuard<'static, ()>)> {
    let gpu = common::gpu_runtime()?;
    // A test that failed while holding the lock leaves nothing half-done on the GPU
    // that the next one depends on.
    let turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    Some((gpu, turn))
}

/// Launches serialize (`CUDA_LAUNCH_BLOCKING=1`, the bundle's second run, with
/// `CUDA_DEVICE_MAX_CONNECTIONS=1`).
fn serialized() -> bool {
    std::env::var("CUDA_LAUNCH_BLOCKING").is_ok_and(|value| value == "1")
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// `Ok` or the driver's error, named.
fn check(result: sys::CUresult, call: &str) -> Result<(), String> {
    result.result().map_err(|error| format!("{call}: {error}"))
}

/// A PTX module with one empty kernel, for module loads and unloads.
const EMPTY_PTX: &str = "
.version 7.8
.target sm_80
.address_size 64
.visible .entry hd_nothing() { ret; }
";

/// Bytes of the allocations the calls make and free.
const BYTES: usize = 1 << 20;

/// Host memory aligned to a page, for `cuMemHostRegister`.
struct PageAligned(*mut u8);

// SAFETY: a plain allocation; the tests hand it between threads, one at a time.
unsafe impl Send for PageAligned {}

impl PageAligned {
    fn layout() -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(BYTES, 4096).expect("a valid layout")
    }
    fn new() -> Self {
        // SAFETY: a non-zero size.
        let pointer = unsafe { std::alloc::alloc_zeroed(Self::layout()) };
        assert!(!pointer.is_null(), "out of memory");
        Self(pointer)
    }
}

impl Drop for PageAligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with the same layout.
        unsafe { std::alloc::dealloc(self.0, Self::layout()) }
    }
}

/// A mapped buffer a call on another thread drops.
struct Movable<'g>(MappedBuffer<'g>);

// SAFETY: pinned memory and a runtime reference; `MappedBuffer` is not `Send` only
// because it holds the raw host pointer. Its drop binds the context and frees the
// memory, which any thread may do (`bounded` binds it too).
unsafe impl Send for Movable<'_> {}

/// What a call took or left behind: freed or released after the kernels have ended.
#[derive(Default)]
struct Leftovers {
    device: Vec<sys::CUdeviceptr>,
    pinned: Vec<usize>,
    registered: Vec<PageAligned>,
    modules: Vec<Module>,
}

/// What the calls use, made before any kernel runs (so that making it is not
/// measured), each taken once.
struct Stock<'g> {
    gpu: &'g Gpu,
    /// A non-blocking stream other than the waiting kernel's.
    other: Stream,
    device_to_free: Mutex<Option<sys::CUdeviceptr>>,
    managed_to_free: Mutex<Option<sys::CUdeviceptr>>,
    pinned_to_free: Mutex<Option<usize>>,
    to_register: Mutex<Option<PageAligned>>,
    to_unregister: Mutex<Option<PageAligned>>,
    module_to_unload: Mutex<Option<Module>>,
    /// A module loaded before the kernel, whose kernel is first fetched and launched
    /// in a call (lazy loading loads it then).
    lazy: Module,
    mapped_to_drop: Mutex<Option<Movable<'g>>>,
    placed_to_drop: Mutex<Option<scoped_sync::cuda::Placed<'g, HandoffSemaphore<HostToGpu>>>>,
    /// A device word for the synchronous copies, and pinned words for the others.
    device_word: sys::CUdeviceptr,
    pinned_words: MappedBuffer<'g>,
    leftovers: Mutex<Leftovers>,
}

impl<'g> Stock<'g> {
    fn new(gpu: &'g Gpu) -> Self {
        gpu.cudarc_context().bind_to_thread().unwrap();
        let allocate = || {
            let mut pointer = 0;
            // SAFETY: an out-pointer to a local.
            check(
                unsafe { sys::cuMemAlloc_v2(&mut pointer, BYTES) },
                "cuMemAlloc",
            )
            .unwrap();
            pointer
        };
        let mut managed = 0;
        let attach = sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32;
        check(
            // SAFETY: an out-pointer to a local.
            unsafe { sys::cuMemAllocManaged(&mut managed, BYTES, attach) },
            "cuMemAllocManaged",
        )
        .unwrap();
        let mut pinned: *mut c_void = std::ptr::null_mut();
        check(
            // SAFETY: as above.
            unsafe { sys::cuMemHostAlloc(&mut pinned, BYTES, 0) },
            "cuMemHostAlloc",
        )
        .unwrap();
        let to_unregister = PageAligned::new();
        check(
            // SAFETY: a live page-aligned allocation of BYTES, unregistered in a call.
            unsafe { sys::cuMemHostRegister_v2(to_unregister.0.cast(), BYTES, 0) },
            "cuMemHostRegister",
        )
        .unwrap();
        let stock = Self {
            gpu,
            other: gpu.new_stream().unwrap(),
            device_to_free: Mutex::new(Some(allocate())),
            managed_to_free: Mutex::new(Some(managed)),
            pinned_to_free: Mutex::new(Some(pinned as usize)),
            to_register: Mutex::new(Some(PageAligned::new())),
            to_unregister: Mutex::new(Some(to_unregister)),
            module_to_unload: Mutex::new(Some(gpu.load_ptx("hd_unload", EMPTY_PTX).unwrap())),
            lazy: gpu.load_ptx("hd_lazy", EMPTY_PTX).unwrap(),
            mapped_to_drop: Mutex::new(Some(Movable(gpu.mapped(16).unwrap()))),
            placed_to_drop: Mutex::new(Some(
                gpu.place_mapped(HandoffSemaphore::<HostToGpu>::new(0))
                    .unwrap(),
            )),
            device_word: allocate(),
            pinned_words: gpu.mapped(16).unwrap(),
            leftovers: Mutex::new(Leftovers::default()),
        };
        // The empty kernel's calls measure launches, not its loading (lazy loading
        // loads a kernel at its first use): one launch before any kernel waits.
        stock.launch_empty(&stock.other).unwrap();
        stock.other.synchronize().unwrap();
        stock
    }

    fn other_raw(&self) -> sys::CUstream {
        self.other.cudarc().cu_stream()
    }

    /// Launches the empty kernel on `stream`.
    fn launch_empty(&self, stream: &Stream) -> Result<(), String> {
        let kernel = self.gpu.kernel("bus_empty").map_err(|e| e.to_string())?;
        // SAFETY: `bus_empty()` takes nothing.
        unsafe { kernel.launch(LaunchConfig::new(1, 1).on(stream), KernelArgs::new()) }
            .map_err(|e| e.to_string())
    }

    /// Frees what the calls left, after every kernel has ended.
    fn clean_up(self) {
        self.gpu.synchronize().unwrap();
        self.other.synchronize().unwrap();
        let leftovers = self.leftovers.into_inner().unwrap();
        self.gpu.cudarc_context().bind_to_thread().unwrap();
        // SAFETY: allocations made by the calls (or kept for them) that no kernel uses
        // any more, each freed once.
        unsafe {
            for pointer in leftovers.device.into_iter().chain([self.device_word]) {
                sys::cuMemFree_v2(pointer);
            }
            for pointer in leftovers.pinned {
                sys::cuMemFreeHost(pointer as *mut c_void);
            }
            for memory in &leftovers.registered {
                sys::cuMemHostUnregister(memory.0.cast());
            }
        }
        drop(leftovers.modules);
        for taken in [&self.device_to_free, &self.managed_to_free] {
            if let Some(pointer) = taken.lock().unwrap().take() {
                // SAFETY: as above.
                unsafe { sys::cuMemFree_v2(pointer) };
            }
        }
    }
}

/// Whether a call returns while a kernel waits, or waits for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Behaviour {
    /// Returns while the kernel still waits.
    Returns,
    /// Waits until the kernel ends.
    Waits,
}

use Behaviour::{Returns, Waits};

/// A driver call (or a runtime operation) made while a kernel waits on a `HostToGpu`
/// semaphore, with what docs/host-device.md says it does as is and where launches
/// block (beside a stream wait, see [`BESIDE_A_STREAM_WAIT`]).
struct Call<'s> {
    name: &'static str,
    default_mode: Behaviour,
    serialized_mode: Behaviour,
    run: Box<dyn Fn() -> Result<(), String> + Sync + 's>,
}

/// The call whose wait comes from lazy loading (`CUDA_MODULE_LOADING`, lazy by
/// default since CUDA 12.2 on Linux): with `CUDA_MODULE_LOADING=EAGER` it returns.
const LAZY_FIRST_LAUNCH: &str =
    "first launch of a kernel (lazy loading), another stream, synchronized";

/// Calls that behave otherwise beside a stream wait than beside a spinning kernel:
/// (name, as is, where launches serialize). Where every stream shares one hardware
/// queue (`CUDA_DEVICE_MAX_CONNECTIONS=1`), a pending stream wait holds back the
/// copies and stream operations of the other streams too; a running kernel does not.
const BESIDE_A_STREAM_WAIT: &[(&str, Behaviour, Behaviour)] = &[
    (
        "cuMemcpyHtoDAsync + cuStreamSynchronize, another stream",
        Returns,
        Waits,
    ),
    (
        "cuStreamWaitValue32 + cuStreamWriteValue32, another stream, synchronized",
        Returns,
        Waits,
    ),
];

/// What docs/host-device.md says `call` does beside `blocker` in this process's launch
/// and loading mode.
fn documented(call: &Call<'_>, blocker: Blocker, serialized: bool) -> Behaviour {
    let eager = std::env::var("CUDA_MODULE_LOADING").is_ok_and(|mode| mode == "EAGER");
    let (default_mode, serialized_mode) = BESIDE_A_STREAM_WAIT
        .iter()
        .find(|(name, ..)| blocker == Blocker::StreamWait && *name == call.name)
        .map_or(
            (call.default_mode, call.serialized_mode),
            |&(_, default, serial)| (default, serial),
        );
    if serialized {
        serialized_mode
    } else if eager && call.name == LAZY_FIRST_LAUNCH {
        Returns
    } else {
        default_mode
    }
}

/// `cuMemAllocAsync` of [`BYTES`] on `stream`, then `cuMemFreeAsync` of it there.
fn alloc_and_free_async(stream: sys::CUstream) -> Result<(), String> {
    let mut pointer = 0;
    // SAFETY: an out-pointer to a local; `stream` is live (or the legacy default
    // stream); the allocation is freed once, on it.
    unsafe {
        check(
            sys::cuMemAllocAsync(&mut pointer, BYTES, stream),
            "cuMemAllocAsync",
        )?;
        check(sys::cuMemFreeAsync(pointer, stream), "cuMemFreeAsync")
    }
}

/// Every call the test makes. The order groups them as the docs' table does.
fn calls<'s>(stock: &'s Stock<'_>) -> Vec<Call<'s>> {
    let mut calls: Vec<Call<'s>> = Vec::new();
    let mut add = |name,
                   default_mode,
                   serialized_mode,
                   run: Box<dyn Fn() -> Result<(), String> + Sync + 's>| {
        calls.push(Call {
            name,
            default_mode,
            serialized_mode,
            run,
        })
    };
    add(
        "cuMemAlloc",
        Returns,
        Waits,
        Box::new(|| {
            let mut pointer = 0;
            // SAFETY: an out-pointer to a local.
            let result = unsafe { sys::cuMemAlloc_v2(&mut pointer, BYTES) };
            check(result, "cuMemAlloc")?;
            stock.leftovers.lock().unwrap().device.push(pointer);
            Ok(())
        }),
    );
    add(
        "cuMemFree",
        Waits,
        Waits,
        Box::new(|| {
            let pointer = stock.device_to_free.lock().unwrap().take().expect("once");
            // SAFETY: allocated in `Stock::new`, used by no kernel, freed once.
            check(unsafe { sys::cuMemFree_v2(pointer) }, "cuMemFree")
        }),
    );
    add(
        "cuMemAllocAsync + cuMemFreeAsync, another stream",
        Returns,
        Returns,
        Box::new(|| alloc_and_free_async(stock.other_raw())),
    );
    add(
        "cuMemAllocAsync + cuMemFreeAsync, legacy default stream",
        Returns,
        Returns,
        Box::new(|| alloc_and_free_async(std::ptr::null_mut())),
    );
    add(
        "cuMemAllocManaged",
        Returns,
        Waits,
        Box::new(|| {
            let mut pointer = 0;
            let attach = sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32;
            // SAFETY: an out-pointer to a local.
            let result = unsafe { sys::cuMemAllocManaged(&mut pointer, BYTES, attach) };
            check(result, "cuMemAllocManaged")?;
            stock.leftovers.lock().unwrap().device.push(pointer);
            Ok(())
        }),
    );
    add(
        "cuMemFree, managed",
        Waits,
        Waits,
        Box::new(|| {
            let pointer = stock.managed_to_free.lock().unwrap().take().expect("once");
            // SAFETY: allocated in `Stock::new`, used by no kernel, freed once.
            check(unsafe { sys::cuMemFree_v2(pointer) }, "cuMemFree")
        }),
    );
    add(
        "cuMemHostAlloc",
        Returns,
        Waits,
        Box::new(|| {
            let mut pointer: *mut c_void = std::ptr::null_mut();
            // SAFETY: an out-pointer to a local.
            let result = unsafe { sys::cuMemHostAlloc(&mut pointer, BYTES, 0) };
            check(result, "cuMemHostAlloc")?;
            stock
                .leftovers
                .lock()
                .unwrap()
                .pinned
                .push(pointer as usize);
            Ok(())
        }),
    );
    add(
        "cuMemFreeHost",
        Waits,
        Waits,
        Box::new(|| {
            let pointer = stock.pinned_to_free.lock().unwrap().take().expect("once");
            // SAFETY: allocated in `Stock::new`, used by no kernel, freed once.
            check(
                unsafe { sys::cuMemFreeHost(pointer as *mut c_void) },
                "cuMemFreeHost",
            )
        }),
    );
    add(
        "cuMemHostRegister",
        Returns,
        Waits,
        Box::new(|| {
            let memory = stock.to_register.lock().unwrap().take().expect("once");
            // SAFETY: a live page-aligned allocation of BYTES, unregistered after the test.
            let result = check(
                unsafe { sys::cuMemHostRegister_v2(memory.0.cast(), BYTES, 0) },
                "cuMemHostRegister",
            );
            stock.leftovers.lock().unwrap().registered.push(memory);
            result
        }),
    );
    add(
        "cuMemHostUnregister",
        Waits,
        Waits,
        Box::new(|| {
            let memory = stock.to_unregister.lock().unwrap().take().expect("once");
            // SAFETY: registered in `Stock::new`, used by no kernel.
            check(
                unsafe { sys::cuMemHostUnregister(memory.0.cast()) },
                "cuMemHostUnregister",
            )
        }),
    );
    add(
        "cuMemcpyHtoD (synchronous)",
        Returns,
        Waits,
        Box::new(|| {
            let value = 7_u64;
            // SAFETY: 8 bytes from a local into a live device allocation.
            check(
                unsafe {
                    sys::cuMemcpyHtoD_v2(stock.device_word, std::ptr::from_ref(&value).cast(), 8)
                },
                "cuMemcpyHtoD",
            )
        }),
    );
    add(
        "cuMemcpyDtoH (synchronous)",
        Returns,
        Waits,
        Box::new(|| {
            let mut value = 0_u64;
            // SAFETY: 8 bytes from a live device allocation into a local.
            check(
                unsafe {
                    sys::cuMemcpyDtoH_v2(
                        std::ptr::from_mut(&mut value).cast(),
                        stock.device_word,
                        8,
                    )
                },
                "cuMemcpyDtoH",
            )
        }),
    );
    add(
        "cuMemcpyHtoDAsync + cuStreamSynchronize, another stream",
        Returns,
        Returns,
        Box::new(|| {
            let source = stock.pinned_words.host_words().as_ptr();
            // SAFETY: 8 pinned bytes that live until the test ends, into a live device
            // word, on a live stream, which is then synchronized.
            unsafe {
                check(
                    sys::cuMemcpyHtoDAsync_v2(
                        stock.device_word,
                        source.cast(),
                        8,
                        stock.other_raw(),
                    ),
                    "cuMemcpyHtoDAsync",
                )?;
            }
            stock.other.synchronize().map_err(|e| e.to_string())
        }),
    );
    add(
        "cuLaunchKernel, another stream",
        Returns,
        Waits,
        Box::new(|| stock.launch_empty(&stock.other)),
    );
    add(
        "cuStreamSynchronize, another stream, after a launch",
        Returns,
        Waits,
        Box::new(|| {
            stock.launch_empty(&stock.other)?;
            stock.other.synchronize().map_err(|e| e.to_string())
        }),
    );
    add(
        LAZY_FIRST_LAUNCH,
        Waits,
        Waits,
        Box::new(|| {
            let kernel = stock.lazy.kernel("hd_nothing").map_err(|e| e.to_string())?;
            // SAFETY: `hd_nothing()` takes nothing.
            unsafe { kernel.launch(LaunchConfig::new(1, 1).on(&stock.other), KernelArgs::new()) }
                .map_err(|e| e.to_string())?;
            stock.other.synchronize().map_err(|e| e.to_string())
        }),
    );
    add(
        "cuLaunchKernel, legacy default stream",
        Returns,
        Waits,
        Box::new(|| stock.launch_empty(&stock.gpu.default_stream())),
    );
    add(
        "cuStreamSynchronize, legacy default stream",
        Returns,
        Returns,
        Box::new(|| stock.gpu.synchronize().map_err(|e| e.to_string())),
    );
    add(
        "cuEventRecord + cuEventSynchronize, another stream",
        Returns,
        Waits,
        Box::new(|| {
            let event = stock
                .other
                .cudarc()
                .record_event(None)
                .map_err(|e| e.to_string())?;
            event.synchronize().map_err(|e| e.to_string())
        }),
    );
    add(
        "cuStreamWaitValue32 + cuStreamWriteValue32, another stream, synchronized",
        Returns,
        Returns,
        Box::new(|| {
            let words = &stock.pinned_words;
            words.host_words()[2].store(1, Ordering::Relaxed);
            stock
                .other
                .wait_mapped_u32(words, 2, 1, WaitCondition::Geq)
                .map_err(|e| e.to_string())?;
            stock
                .other
                .write_mapped_u32(words, 3, 1)
                .map_err(|e| e.to_string())?;
            stock.other.synchronize().map_err(|e| e.to_string())
        }),
    );
    add(
        "cuCtxSynchronize",
        Waits,
        Waits,
        Box::new(|| {
            // SAFETY: no arguments; the calling thread has the context bound.
            check(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize")
        }),
    );
    add(
        "cuModuleLoadData",
        Waits,
        Waits,
        Box::new(|| {
            let module = stock
                .gpu
                .load_ptx("hd_load", EMPTY_PTX)
                .map_err(|e| e.to_string())?;
            stock.leftovers.lock().unwrap().modules.push(module);
            Ok(())
        }),
    );
    add(
        "cuModuleUnload",
        Waits,
        Waits,
        Box::new(|| {
            drop(stock.module_to_unload.lock().unwrap().take().expect("once"));
            Ok(())
        }),
    );
    add(
        "cuStreamCreate + cuStreamDestroy (Runtime::new_stream, drop)",
        Returns,
        Waits,
        Box::new(|| {
            drop(stock.gpu.new_stream().map_err(|e| e.to_string())?);
            Ok(())
        }),
    );
    add(
        "Runtime::zeros + drop (stream-ordered, legacy default stream)",
        Returns,
        Waits,
        Box::new(|| {
            drop(
                stock
                    .gpu
                    .zeros::<u32>(BYTES / 4)
                    .map_err(|e| e.to_string())?,
            );
            Ok(())
        }),
    );
    add(
        "Runtime::upload + download (legacy default stream)",
        Returns,
        Waits,
        Box::new(|| {
            let slice = stock
                .gpu
                .upload(&[1_u32, 2, 3])
                .map_err(|e| e.to_string())?;
            let back = stock.gpu.download(&slice).map_err(|e| e.to_string())?;
            if back == [1, 2, 3] {
                Ok(())
            } else {
                Err(format!("downloaded {back:?}"))
            }
        }),
    );
    add(
        "Runtime::mapped (cuMemHostAlloc)",
        Returns,
        Waits,
        Box::new(|| {
            let buffer = stock.gpu.mapped(16).map_err(|e| e.to_string())?;
            // Dropping it would wait for the kernel (cuCtxSynchronize): kept until the end.
            std::mem::forget(buffer);
            Ok(())
        }),
    );
    add(
        "drop(MappedBuffer) (cuCtxSynchronize + cuMemFreeHost)",
        Waits,
        Waits,
        Box::new(|| {
            drop(stock.mapped_to_drop.lock().unwrap().take().expect("once").0);
            Ok(())
        }),
    );
    add(
        "Runtime::place_mapped",
        Returns,
        Waits,
        Box::new(|| {
            let placed = stock
                .gpu
                .place_mapped(HandoffSemaphore::<HostToGpu>::new(0))
                .map_err(|e| e.to_string())?;
            std::mem::forget(placed);
            Ok(())
        }),
    );
    add(
        "drop(Placed) (cuCtxSynchronize + cuMemFreeHost)",
        Waits,
        Waits,
        Box::new(|| {
            drop(stock.placed_to_drop.lock().unwrap().take().expect("once"));
            Ok(())
        }),
    );
    calls
}

/// How one call went beside the waiting kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Outcome {
    /// Returned after this long, the kernel still waiting.
    Returned(Duration),
    /// Had not returned after [`BOUND`]; returned this long after the kernel's release.
    Waited(Duration),
}

impl Outcome {
    fn behaviour(self) -> Behaviour {
        match self {
            Outcome::Returned(_) => Returns,
            Outcome::Waited(_) => Waits,
        }
    }
}

/// Runs `call` on a helper thread (its context bound); if it has not returned after
/// [`BOUND`], calls `release` (which lets the kernel end) and waits for it. A call
/// that fails, or that still has not returned [`DEADLOCK`] after the release, fails the
/// test (the hang guard around the test ends a call that never returns).
fn bounded(
    gpu: &Gpu,
    name: &str,
    call: &(dyn Fn() -> Result<(), String> + Sync),
    release: impl FnOnce(),
) -> Outcome {
    std::thread::scope(|scope| {
        let (done, returned) = mpsc::channel();
        let start = Instant::now();
        scope.spawn(move || {
            gpu.cudarc_context().bind_to_thread().unwrap();
            let result = call();
            let _ = done.send(result);
        });
        match returned.recv_timeout(BOUND) {
            Ok(result) => {
                result.unwrap_or_else(|error| panic!("{name} failed: {error}"));
                Outcome::Returned(start.elapsed())
            }
            Err(RecvTimeoutError::Timeout) => {
                release();
                let released = Instant::now();
                match returned.recv_timeout(DEADLOCK) {
                    Ok(result) => {
                        result.unwrap_or_else(|error| panic!("{name} failed: {error}"));
                        Outcome::Waited(released.elapsed())
                    }
                    Err(_) => {
                        eprintln!(
                            "{name}: no return {DEADLOCK:?} after the kernel ended: a deadlock"
                        );
                        std::process::abort();
                    }
                }
            }
            Err(RecvTimeoutError::Disconnected) => panic!("{name} panicked"),
        }
    })
}

/// What holds the GPU back while the calls are made: a unit of a `HostToGpu`
/// semaphore that the test releases only after a call has waited [`BOUND`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Blocker {
    /// `hd_wait_handoff` runs, polling the semaphore (a persistent kernel's wait).
    SpinningKernel,
    /// A stream waits on the semaphore's count ([`Stream::wait_released`]) with
    /// `hd_gated_ack` queued behind it: no kernel runs.
    StreamWait,
}

/// Makes every call of `calls` while `blocker` waits on a `HostToGpu` semaphore,
/// starting a new blocker after each call that waited for it (the test released it);
/// returns each call's outcome.
fn classify(gpu: &Gpu, calls: &[Call<'_>], blocker: Blocker) -> Vec<Outcome> {
    let work = gpu
        .place_mapped(HandoffSemaphore::<HostToGpu>::new(0))
        .unwrap();
    // Spinning kernel: word 0 started, word 1 outcome. Stream wait: u32 0 the payload,
    // u32 1 what the gated kernel saw, u64 1 its answer.
    let flags = gpu.mapped(4).unwrap();
    let stream = gpu.new_stream().unwrap();
    let mut producer = work.producer().unwrap();
    let mut outcomes = Vec::new();
    let mut unit = 0;
    while outcomes.len() < calls.len() {
        unit += 1;
        for word in flags.host_words() {
            word.store(0, Ordering::Relaxed);
        }
        let base = flags.device_address();
        let (kernel, args) = match blocker {
            Blocker::SpinningKernel => {
                let kernel = gpu.kernel("hd_wait_handoff").unwrap();
                let args = KernelArgs::new()
                    .arg(&work)
                    .arg(base)
                    .arg(base + 4)
                    .arg(nanos(KERNEL_PATIENCE));
                (kernel, args)
            }
            Blocker::StreamWait => {
                let kernel = gpu.kernel("hd_gated_ack").unwrap();
                // Queued on this thread: a stream memory operation returns at once, also
                // where launches block (the launch, beside, may not).
                stream
                    .wait_released(&work, unit)
                    .expect("the stream wait is queued");
                let args = KernelArgs::new()
                    .arg(base)
                    .arg(base + 4)
                    .arg(base + 8)
                    .arg(unit);
                (kernel, args)
            }
        };
        let config = LaunchConfig::new(1, 1).on(&stream);
        // SAFETY: `hd_wait_handoff(sem*, u32*, u32*, u64)` or `hd_gated_ack(u32*, u32*,
        // u64*, u64)`, as `args` says; all outlive it (the stream is synchronized below).
        let run = unsafe {
            kernel.launch_beside(config, args, |running: &Beside<'_>| {
                // Still held: the spinning kernel's outcome word, or the gated kernel's
                // answer, is unwritten.
                let still_held = || match blocker {
                    Blocker::SpinningKernel => flags.read(1) == 0,
                    Blocker::StreamWait => flags.read_u64(1) == 0,
                };
                match blocker {
                    Blocker::SpinningKernel => running
                        .wait()
                        .timeout(PATIENCE)
                        .wait_until(&mut || flags.read(0) == 1)
                        .expect("the waiting kernel starts"),
                    Blocker::StreamWait => {
                        // The wait is queued (above); the helper thread queues the
                        // launch (which may block until the kernel ends where launches
                        // block).
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
                let mut released = false;
                while !released && outcomes.len() < calls.len() {
                    let call = &calls[outcomes.len()];
                    let result = bounded(gpu, call.name, &*call.run, || {
                        producer.release(1);
                        released = true;
                    });
                    if !released {
                        // The GPU must still be held back, or the call proved nothing.
                        assert!(still_held(), "{}: the blocker ended early", call.name);
                    }
                    outcomes.push(result);
                }
                if !released {
                    producer.release(1);
                }
            })
        };
        stream.synchronize().unwrap();
        run.launch.unwrap();
        match blocker {
            Blocker::SpinningKernel => {
                assert_eq!(flags.read(1), ACQUIRED, "the kernel acquired its unit");
            }
            Blocker::StreamWait => {
                assert_eq!(flags.read_u64(1), unit, "the gated kernel ran");
            }
        }
    }
    outcomes
}

/// Makes every call beside `blocker`, prints each outcome, and fails unless every
/// call behaves as docs/host-device.md says (the test ends a call that never returns
/// after its release as a deadlock).
fn calls_beside(gpu: &Gpu, blocker: Blocker) {
    let stock = Stock::new(gpu);
    let calls = calls(&stock);
    let outcomes = classify(gpu, &calls, blocker);
    let serialized = serialized();
    let tool = common::under_compute_sanitizer();
    let mut wrong = Vec::new();
    eprintln!(
        "{:<75} {:>12}  beside {blocker:?}{}",
        "call",
        "outcome",
        if serialized {
            ", launches serialized"
        } else {
            ""
        }
    );
    for (call, outcome) in calls.iter().zip(&outcomes) {
        let documented = documented(call, blocker, serialized);
        let (what, took) = match outcome {
            Outcome::Returned(took) => ("returned", took),
            Outcome::Waited(took) => ("waited", took),
        };
        eprintln!(
            "{:<75} {what:>8} {:>9.3} ms",
            call.name,
            took.as_secs_f64() * 1e3
        );
        // Under compute-sanitizer a call may wait that returns without it: the tools
        // run one kernel at a time and hold some calls (initcheck: allocations and
        // copies too) until the waiting kernel ends. Every call must still return
        // once the kernel is released, and one documented to wait must wait.
        let held_by_the_tool = tool.is_some() && documented == Returns;
        if outcome.behaviour() != documented && !held_by_the_tool {
            wrong.push(format!(
                "{}: {outcome:?}, documented {documented:?}",
                call.name
            ));
        }
    }
    drop(calls);
    stock.clean_up();
    assert!(
        wrong.is_empty(),
        "calls that behave otherwise than docs/host-device.md says:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_driver_call_deadlocks_while_a_kernel_waits_on_a_host_to_gpu_semaphore() {
    let Some((gpu, _turn)) = runtime() else {
        return;
    };
    hang_guard("driver calls beside a waiting kernel", 600, || {
        calls_beside(&gpu, Blocker::SpinningKernel);
    });
}

#[test]
fn no_driver_call_deadlocks_while_a_stream_waits_on_a_host_to_gpu_semaphore() {
    let Some((gpu, _turn)) = runtime() else {
        return;
    };
    hang_guard("driver calls beside a stream wait", 600, || {
        calls_beside(&gpu, Blocker::StreamWait);
    });
}

/// The placements whose flag the driver sets, by a copy or a stream write on another
/// stream. Under compute-sanitizer they run but are not judged: racecheck held both
/// until the waiting kernel ended, initcheck the stream write (on an H100, both waits
/// ran out of patience; memcheck and synccheck passed them; docs/sanitizers.md).
const DRIVER_SET: [FlagPlacement; 2] =
    [FlagPlacement::DeviceCopy, FlagPlacement::DeviceStreamWrite];

#[test]
fn a_host_set_flag_reaches_a_waiting_kernel_in_every_placement() {
    let Some((gpu, _turn)) = runtime() else {
        return;
    };
    hang_guard("host-set flags", 300, || {
        let managed = gpu.concurrent_managed_access().unwrap();
        let mut wrong = Vec::new();
        for placement in FlagPlacement::ALL {
            if placement == FlagPlacement::Managed && !managed {
                eprintln!("{}: skipped (no concurrentManagedAccess)", placement.name());
                continue;
            }
            let result = flag_round_trips(&gpu, placement, 200, PATIENCE);
            match &result {
                Ok(took) => {
                    let mut sorted = took.clone();
                    sorted.sort();
                    eprintln!(
                        "{}: 200 flags seen; round trip min {:?}, median {:?}, max {:?}",
                        placement.name(),
                        sorted[0],
                        sorted[sorted.len() / 2],
                        sorted[sorted.len() - 1]
                    );
                }
                Err(error) => eprintln!("{}: not seen: {error}", placement.name()),
            }
            if let Err(error) = result {
                let tool = common::under_compute_sanitizer();
                if let (Some(evidence), true) = (&tool, DRIVER_SET.contains(&placement)) {
                    eprintln!(
                        "{}: not judged under compute-sanitizer ({evidence}: a tool may \
                         hold a copy or stream write on another stream until the waiting \
                         kernel ends)",
                        placement.name()
                    );
                } else {
                    wrong.push(format!("{}: {error}", placement.name()));
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "flags that did not reach the kernel: {wrong:?}"
        );
    });
}

/// Words of the gated kernel: u64 0: its answer; u32 4: the payload; u32 6: what it saw.
struct GateWords<'g>(MappedBuffer<'g>);

impl<'g> GateWords<'g> {
    fn new(gpu: &'g Gpu) -> Self {
        Self(gpu.mapped(8).unwrap())
    }
    fn answer(&self) -> u64 {
        self.0.read_u64(0)
    }
    fn set_payload(&self, value: u32) {
        self.0.host_words()[4].store(value, Ordering::Relaxed);
    }
    fn seen(&self) -> u32 {
        self.0.read(6)
    }
    fn args(&self, value: u64) -> KernelArgs<'static> {
        let base = self.0.device_address();
        KernelArgs::new()
            .arg(base + 16)
            .arg(base + 24)
            .arg(base)
            .arg(value)
    }
}

/// Queues `gate` on `stream`, and then `hd_gated_ack` (answering `value`) from a helper
/// thread ([`launch_beside`](scoped_sync::cuda::Kernel::launch_beside)); on this thread
/// checks that the kernel has not run after a pause, sets the payload to `value`, calls
/// `open` (which must satisfy the gate), and waits for the answer. Returns whether the
/// kernel had stayed behind the gate.
fn gated_launch(
    gpu: &Gpu,
    stream: &Stream,
    words: &GateWords<'_>,
    value: u64,
    gate: impl FnOnce(&Stream) -> Result<(), StreamMemOpError>,
    open: impl FnOnce(),
) -> bool {
    let kernel = gpu.kernel("hd_gated_ack").unwrap();
    // Queued on this thread: a stream memory operation returns at once, also where
    // launches block (the launch, beside, may not).
    if let Err(error) = gate(stream) {
        panic!("the stream wait was refused: {error}");
    }
    let config = LaunchConfig::new(1, 1).on(stream);
    // SAFETY: `hd_gated_ack(u32*, u32*, u64*, u64)`; the words outlive it.
    let run = unsafe {
        kernel.launch_beside(config, words.args(value), |running: &Beside<'_>| {
            // Long enough for an ungated kernel to have run many times over; a gate
            // that holds can never make this check fail.
            std::thread::sleep(Duration::from_millis(50));
            let held = words.answer() < value && running.is_running().unwrap();
            words.set_payload(value as u32);
            open();
            running
                .wait()
                .timeout(PATIENCE)
                .wait_until(&mut || words.answer() >= value)
                .expect("the gated kernel runs once the gate opens");
            held
        })
    };
    stream.synchronize().unwrap();
    run.launch.unwrap();
    assert_eq!(
        words.seen(),
        value as u32,
        "the gated kernel saw the payload written before the gate opened"
    );
    run.host
}

#[test]
fn a_stream_gated_on_a_handoff_semaphore_starts_its_kernels_only_after_each_release() {
    let Some((gpu, _turn)) = runtime() else {
        return;
    };
    hang_guard("stream gated on a semaphore", 120, || {
        let work = gpu
            .place_mapped(HandoffSemaphore::<HostToGpu>::new(0))
            .unwrap();
        let words = GateWords::new(&gpu);
        let stream = gpu.new_stream().unwrap();
        let mut producer = work.producer().unwrap();
        for unit in 1..=3 {
            let held = gated_launch(
                &gpu,
                &stream,
                &words,
                unit,
                |stream| stream.wait_released(&work, unit),
                || {
                    producer.release(1);
                },
            );
            assert!(
                held,
                "kernel {unit} ran before unit {} was released",
                unit - 1
            );
        }
        assert_eq!(work.released(), 3);
    });
}

#[test]
fn stream_waits_open_on_each_condition_as_the_driver_documents() {
    let Some((gpu, _turn)) = runtime() else {
        return;
    };
    hang_guard("stream wait conditions", 120, || {
        let words = GateWords::new(&gpu);
        let flag = gpu.mapped(4).unwrap(); // u32 0 (and u64 1) gate the kernels
        let stream = gpu.new_stream().unwrap();
        let nor = gpu
            .cudarc_context()
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR)
            .unwrap()
            != 0;
        // (condition, word before, operand, word after): closed before, open after.
        let cases32 = [
            (WaitCondition::Geq, 0xFFFF_FFF0_u32, 0x10_u32, 0x10_u32), // across the wrap
            (WaitCondition::Equal, 1, 5, 5),
            (WaitCondition::And, 0b0100, 0b0011, 0b0010),
            (WaitCondition::Nor, 0xFFFF_0000, 0x0000_FFFF, 0),
        ];
        let cases64 = [
            (WaitCondition::Geq, 5_u64, 1_u64 << 40, 1_u64 << 40),
            (WaitCondition::Equal, 1 << 40, 3 << 40, 3 << 40),
            (WaitCondition::And, 1, 1 << 63, 1 << 63),
            (WaitCondition::Nor, u64::MAX, 0xFFFF, 0),
        ];
        let mut value = 0;
        for (condition, before, operand, after) in cases32 {
            assert!(!condition.holds32(before, operand) && condition.holds32(after, operand));
            if condition == WaitCondition::Nor && !nor {
                let refused = stream.wait_mapped_u32(&flag, 0, operand, condition);
                assert!(
                    matches!(refused, Err(StreamMemOpError::Unsupported { .. })),
                    "{refused:?}"
                );
                continue;
            }
            value += 1;
            flag.host_words()[0].store(before, Ordering::Relaxed);
            let held = gated_launch(
                &gpu,
                &stream,
                &words,
                value,
                |stream| stream.wait_mapped_u32(&flag, 0, operand, condition),
                || flag.host_words()[0].store(after, Ordering::Release),
            );
            assert!(
                held,
                "32-bit {condition:?} opened on {before:#x} against {operand:#x}"
            );
        }
        let wide = gpu
            .cudarc_context()
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS)
            .unwrap()
            != 0;
        for (condition, before, operand, after) in cases64 {
            assert!(!condition.holds64(before, operand) && condition.holds64(after, operand));
            if !wide || (condition == WaitCondition::Nor && !nor) {
                let refused = stream.wait_mapped_u64(&flag, 1, operand, condition);
                assert!(
                    matches!(refused, Err(StreamMemOpError::Unsupported { .. })),
                    "{refused:?}"
                );
                continue;
            }
            value += 1;
            flag.write_u64(1, before);
            let held = gated_launch(
                &gpu,
                &stream,
                &words,
                value,
                |stream| stream.wait_mapped_u64(&flag, 1, operand, condition),
                || flag.write_u64(1, after),
            );
            assert!(
                held,
                "64-bit {condition:?} opened on {before:#x} against {operand:#x}"
            );
        }
    });
}

#[test]
fn stream_writes_land_in_stream_order_and_reach_the_host() {
    let Some((gpu, _turn)) = runtime() else {
        return;
    };
    hang_guard("stream writes", 60, || {
        let words = gpu.mapped(8).unwrap(); // u32 0: gate; u32 1: written; u64 1: written
        let stream = gpu.new_stream().unwrap();
        // Queued on this thread, before the wait: stream memory operations return at
        // once, also where launches block (and there is no kernel to launch beside).
        let queue = || -> Result<(), StreamMemOpError> {
            stream.wait_mapped_u32(&words, 0, 1, WaitCondition::Geq)?;
            stream.write_mapped_u32(&words, 1, 0xABCD)?;
            stream.write_mapped_u64(&words, 1, 0x1234_5678_9ABC)
        };
        if let Err(error) = queue() {
            panic!("a stream memory operation was refused: {error}");
        }
        std::thread::sleep(Duration::from_millis(50));
        let before = (words.read(1), words.read_u64(1));
        words.host_words()[0].store(1, Ordering::Release);
        HostWait::on(&stream)
            .timeout(PATIENCE)
            .wait_until(&mut || words.read_u64(1) == 0x1234_5678_9ABC)
            .expect("the writes land once the gate opens");
        stream.synchronize().unwrap();
        assert_eq!(before, (0, 0), "the writes waited behind the stream wait");
        assert_eq!(words.read(1), 0xABCD);
    });
}

#[test]
fn stream_memory_operations_refuse_what_the_driver_cannot_do() {
    let Some((gpu, _turn)) = runtime() else {
        return;
    };
    let stream = gpu.new_stream().unwrap();
    let words = gpu.mapped(4).unwrap();
    // SAFETY: refused before anything is queued (the checks come first).
    let misaligned =
        unsafe { stream.wait_value32(words.device_address() + 2, 1, WaitCondition::Geq) };
    assert!(
        matches!(
            misaligned,
            Err(StreamMemOpError::Misaligned { alignment: 4, .. })
        ),
        "{misaligned:?}"
    );
    // SAFETY: as above.
    let misaligned = unsafe { stream.write_value64(words.device_address() + 4, 1) };
    assert!(
        matches!(
            misaligned,
            Err(StreamMemOpError::Misaligned { alignment: 8, .. })
        ),
        "{misaligned:?}"
    );
    let outside = stream.wait_mapped_u64(&words, 2, 1, WaitCondition::Equal);
    assert!(
        matches!(
            outside,
            Err(StreamMemOpError::OutOfBounds { index: 2, len: 2 })
        ),
        "{outside:?}"
    );
    if gpu.concurrent_managed_access().unwrap() {
        let managed = gpu
            .place_managed(HandoffSemaphore::<HostToGpu>::new(0))
            .unwrap();
        let refused = stream.wait_released(&managed, 1);
        assert!(
            matches!(refused, Err(StreamMemOpError::Managed { .. })),
            "{refused:?}"
        );
        // SAFETY: refused before anything is queued.
        let refused =
            unsafe { stream.wait_value64(managed.device_address(), 1, WaitCondition::Geq) };
        assert!(
            matches!(refused, Err(StreamMemOpError::Managed { .. })),
            "{refused:?}"
        );
    }
    assert!(!stream.is_busy().unwrap(), "nothing was queued");
}

#[test]
fn stream_memory_operations_take_plain_device_memory_and_refuse_pool_memory() {
    let Some((gpu, _turn)) = runtime() else {
        return;
    };
    let stream = gpu.new_stream().unwrap();
    gpu.cudarc_context().bind_to_thread().unwrap();
    let mut plain = 0;
    // SAFETY: an out-pointer to a local.
    let result = unsafe { sys::cuMemAlloc_v2(&mut plain, 16) };
    check(result, "cuMemAlloc").unwrap();
    // The words between the stream writes are read back as 0: they must be written
    // (fresh device memory holds anything, and initcheck reports the copy).
    // SAFETY: four words of the live allocation.
    let result = unsafe { sys::cuMemsetD32_v2(plain, 0, 4) };
    check(result, "cuMemsetD32").unwrap();
    // The memset returns before it lands (device memory) and runs on the legacy
    // stream, which a non-blocking stream does not wait for: the stream writes could
    // land first and be overwritten.
    // SAFETY: the context is current on this thread (bound above).
    let result = unsafe { sys::cuCtxSynchronize() };
    check(result, "cuCtxSynchronize").unwrap();
    // SAFETY: live device words (16 bytes) that nothing else uses; both waits are
    // satisfied at once (GEQ 0), and the stream is synchronized below.
    unsafe {
        stream.write_value32(plain, 5).unwrap();
        stream.write_value64(plain + 8, 6).unwrap();
        stream.wait_value32(plain, 0, WaitCondition::Geq).unwrap();
        stream
            .wait_value64(plain + 8, 0, WaitCondition::Geq)
            .unwrap();
    }
    stream.synchronize().unwrap();
    let mut back = [0_u32; 4];
    // SAFETY: 16 bytes from a live device allocation into a local.
    let result = unsafe { sys::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), plain, 16) };
    check(result, "cuMemcpyDtoH").unwrap();
    // SAFETY: allocated above, no work uses it any more.
    unsafe { sys::cuMemFree_v2(plain) };
    assert_eq!(back, [5, 0, 6, 0], "the stream writes landed");

    // The runtime's own device memory comes from the stream-ordered pool where the
    // device has one: refused with its own error (the driver's is a bare
    // CUDA_ERROR_INVALID_VALUE).
    let pool = gpu.zeros::<u64>(2).unwrap();
    gpu.synchronize().unwrap();
    if gpu.cudarc_context().has_async_alloc() {
        let pooled = gpu.address(&pool);
        // SAFETY: refused before anything is queued.
        let refused = unsafe {
            [
                stream.write_value32(pooled, 5).err(),
                stream.wait_value64(pooled + 8, 0, WaitCondition::Geq).err(),
            ]
        };
        for error in refused {
            assert!(
                matches!(error, Some(StreamMemOpError::Pooled { .. })),
                "{error:?}"
            );
        }
    }
    assert!(!stream.is_busy().unwrap());
}
