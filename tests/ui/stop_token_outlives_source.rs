// A stop token borrows its in-place source: it cannot outlive it.
fn main() {
    let token = {
        let source = scoped_sync::StopSource::new();
        source.token()
    };
    let _ = token.stop_requested();
}
