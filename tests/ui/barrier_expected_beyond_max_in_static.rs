// `Barrier::new` is a `const fn` that rejects an expected count above `max()`: in a
// static, that is a compile-time error carrying the numbers.
static BARRIER: scoped_sync::Barrier = scoped_sync::Barrier::new(u32::MAX);

fn main() {
    BARRIER.arrive_and_wait();
}
