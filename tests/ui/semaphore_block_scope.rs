// The host backend implements only System scope: a block-scope semaphore has no
// methods on CPU threads.
use scoped_sync::{Block, CountingSemaphore, SEMAPHORE_MAX};

fn main() {
    let _semaphore = CountingSemaphore::<SEMAPHORE_MAX, Block>::new(1);
}
