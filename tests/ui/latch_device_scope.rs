// The host backend implements only System scope: a device-scope latch has no methods
// on CPU threads.
fn main() {
    let _latch = scoped_sync::Latch::<scoped_sync::Device>::new(1);
}
