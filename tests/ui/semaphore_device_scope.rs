// The host backend implements only System scope, for the binary semaphore too.
fn main() {
    let semaphore = scoped_sync::BinarySemaphore::<scoped_sync::Device>::new(1);
    semaphore.release(1);
}
