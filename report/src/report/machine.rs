//! What this machine is, for the report's header.

/// The CPU's model name from `/proc/cpuinfo` (Linux), if there is one.
pub fn cpu_model() -> Option<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_owned())
    })
}

/// Hardware threads the process may run on (1 when unknown).
pub fn hardware_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}
