//! [`CorePin`]: keeps the calling thread on the core it runs on, for comparisons of
//! host–GPU round trips.
//!
//! A round trip through mapped memory costs differently from different host cores
//! (the path from a core to the line's cache slice and to the PCIe root differs;
//! docs/measurements.md, `CorePin`). A thread the scheduler moves between two
//! measurements compares cores, not protocols.

/// While it lives, the thread that made it runs only on the core it was on (Linux;
/// elsewhere it does nothing). Dropping it restores the thread's previous affinity.
pub struct CorePin {
    #[cfg(target_os = "linux")]
    previous: Option<libc::cpu_set_t>,
    /// The pin belongs to one thread.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl CorePin {
    /// Pins the calling thread to its current core. If the system refuses, the thread
    /// stays unpinned (the measurement is then only noisier).
    pub fn current_core() -> Self {
        #[cfg(target_os = "linux")]
        {
            Self {
                previous: pin_to_current_core(),
                _not_send: std::marker::PhantomData,
            }
        }
        #[cfg(not(target_os = "linux"))]
        Self {
            _not_send: std::marker::PhantomData,
        }
    }

    /// Whether the thread is pinned.
    pub fn is_pinned(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.previous.is_some();
        #[cfg(not(target_os = "linux"))]
        false
    }
}

/// Returns the affinity before the pin, or `None` if the thread could not be pinned.
#[cfg(target_os = "linux")]
fn pin_to_current_core() -> Option<libc::cpu_set_t> {
    // SAFETY: `cpu_set_t` is a plain bit set; all zeroes is the empty set.
    let mut previous: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: reads the calling thread's (pid 0) affinity into a set of `size` bytes.
    if unsafe { libc::sched_getaffinity(0, size, &mut previous) } != 0 {
        return None;
    }
    // SAFETY: no arguments; returns the core the thread runs on, or -1.
    let core = usize::try_from(unsafe { libc::sched_getcpu() }).ok()?;
    // SAFETY: as above.
    let mut only: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `core` is a core number the kernel just reported, below CPU_SETSIZE.
    unsafe { libc::CPU_SET(core, &mut only) };
    // SAFETY: sets the calling thread's affinity from a set of `size` bytes.
    (unsafe { libc::sched_setaffinity(0, size, &only) } == 0).then_some(previous)
}

impl Drop for CorePin {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(previous) = &self.previous {
            // SAFETY: restores the calling thread's affinity from the set read in
            // `current_core` (the pin is not `Send`: this is the same thread).
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), previous) };
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::CorePin;

    #[test]
    #[cfg_attr(miri, ignore = "sched_getcpu and sched_setaffinity are foreign calls")]
    fn pins_to_one_core_and_restores_the_affinity() {
        let allowed = || {
            // SAFETY: as in `pin_to_current_core`.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            // SAFETY: as above.
            let got = unsafe {
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set)
            };
            assert_eq!(got, 0);
            // SAFETY: reads the set's bits.
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&core| unsafe { libc::CPU_ISSET(core, &set) })
                .count()
        };
        let before = allowed();
        {
            let pin = CorePin::current_core();
            assert!(pin.is_pinned());
            assert_eq!(allowed(), 1);
        }
        assert_eq!(allowed(), before);
    }
}
