// The host backend implements only System scope: a block-scope barrier has no methods
// on CPU threads.
fn main() {
    let _barrier = scoped_sync::Barrier::<scoped_sync::Block>::new(2);
}
