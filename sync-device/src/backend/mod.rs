//! The backend layer: [`Gpu`](crate::Gpu), the `sync_shared::Backend` of CUDA
//! threads that runs the shared algorithms of every primitive, its scope-misuse checks
//! (checked build), and the GPU's side of the bus objects.

pub(crate) mod bus_side;
pub(crate) mod gpu;
pub(crate) mod pe_crossing;
pub(crate) mod scope_check;
