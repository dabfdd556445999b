//! CPU threads standing in for a side of the bus (`tests/bus.rs`, `tests/bus_pes.rs`):
//! the `Side` methods every stand-in implements with host atomics, and a polling
//! `BusWait`.

use std::time::Duration;

use scoped_sync::bus::BusWait;

/// The `Side` methods of a stand-in on host atomics (bus and side words alike), its
/// `pause` a yield; `KIND`, `side_word` and any PE operations are the stand-in's own.
#[macro_export]
macro_rules! host_atomic_side_words {
    () => {
        fn load_bus(word: &BusWord, order: Ordering) -> u64 {
            word.load(order)
        }
        fn store_bus(word: &BusWord, value: u64, order: Ordering) {
            word.store(value, order)
        }
        fn load_side(word: &BusWord, order: Ordering) -> u64 {
            word.load(order)
        }
        fn store_side(word: &BusWord, value: u64, order: Ordering) {
            word.store(value, order)
        }
        fn fetch_add_side(word: &BusWord, value: u64, order: Ordering) -> u64 {
            word.fetch_add(value, order)
        }
        fn compare_exchange_side(
            word: &BusWord,
            current: u64,
            new: u64,
            success: Ordering,
            failure: Ordering,
        ) -> Result<u64, u64> {
            word.compare_exchange(current, new, success, failure)
        }
        fn pause(_round: &mut u32) {
            std::thread::yield_now();
        }
    };
}

/// A `BusWait` that polls with yields and gives up after a while.
pub struct Polling;

impl BusWait for Polling {
    type Error = &'static str;
    fn wait_until(&mut self, ready: &mut dyn FnMut() -> bool) -> Result<(), &'static str> {
        // Miri's virtual clock runs with the interpreter's work: give it longer.
        let limit = Duration::from_secs(if cfg!(miri) { 400 } else { 20 });
        let start = std::time::Instant::now();
        while !ready() {
            if start.elapsed() > limit {
                return Err("gave up");
            }
            std::thread::yield_now();
        }
        Ok(())
    }
}
