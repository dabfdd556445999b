// A semaphore's MAX may not exceed SEMAPHORE_MAX.
static SEMAPHORE: scoped_sync::CountingSemaphore<{ scoped_sync::SEMAPHORE_MAX + 1 }> =
    scoped_sync::CountingSemaphore::new(0);

fn main() {
    SEMAPHORE.release(1);
}
