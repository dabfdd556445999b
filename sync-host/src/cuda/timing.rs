//! GPU time of work on the runtime's stream, from CUDA events (what the CUDA C++
//! anchors use), so launch overhead on the host is not counted.

use std::time::Duration;

use cudarc::driver::sys;

use super::{CudaError, Runtime};

impl Runtime {
    /// Runs `work` (which enqueues on the runtime's stream) between two timing events
    /// and returns the GPU time between them, after waiting for them.
    pub fn gpu_time(
        &self,
        work: impl FnOnce() -> Result<(), CudaError>,
    ) -> Result<Duration, CudaError> {
        let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self
            .stream
            .record_event(timing)
            .map_err(CudaError::driver("record an event"))?;
        work()?;
        let end = self
            .stream
            .record_event(timing)
            .map_err(CudaError::driver("record an event"))?;
        let ms = start
            .elapsed_ms(&end)
            .map_err(CudaError::driver("time between events"))?;
        Ok(Duration::from_secs_f64(f64::from(ms) / 1e3))
    }
}
