//! The README's Rust blocks that rustdoc cannot compile as host doc tests (a kernel
//! crate's `lib.rs`, a build script, programs that open a GPU) are compiled as
//! `examples/readme`: its kernel crate is built to PTX for nvptx64 by the host
//! package's build script (sync-build), and the host package is a workspace member, so
//! `cargo test --workspace` compiles both. This test keeps the README and those files
//! equal: each `rust,ignore` block must stand in its file line for line (indentation
//! aside: a fragment may sit inside a function there).

use std::path::Path;

/// Each `rust,ignore` block of the README, in order, and the file that holds it.
const HOMES: [&str; 5] = [
    "examples/readme/kernels/src/lib.rs",
    "examples/readme/host/build.rs",
    "examples/readme/host/src/main.rs",
    "examples/readme/kernels/src/worker.rs",
    "examples/readme/host/src/worker.rs",
];

/// The lines of `text`, trimmed, blank ones dropped.
fn lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect()
}

/// The README's blocks fenced as `rust,ignore`.
fn ignored_blocks(readme: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut rest = readme;
    while let Some(start) = rest.find("```rust,ignore\n") {
        let body = &rest[start + "```rust,ignore\n".len()..];
        let end = body.find("```").expect("a closing fence");
        blocks.push(&body[..end]);
        rest = &body[end + 3..];
    }
    blocks
}

#[test]
fn every_uncompiled_readme_block_stands_in_a_compiled_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let blocks = ignored_blocks(&readme);
    assert_eq!(
        blocks.len(),
        HOMES.len(),
        "a rust,ignore block was added or removed: give it a home in examples/readme"
    );
    for (block, home) in blocks.iter().zip(HOMES) {
        let file = std::fs::read_to_string(root.join(home)).expect(home);
        let (block, file) = (lines(block), lines(&file));
        let found = file
            .windows(block.len())
            .any(|window| window == block.as_slice());
        assert!(
            found,
            "README block not found, line for line, in {home}:\n{}",
            block.join("\n")
        );
    }
}

#[test]
fn the_check_notices_a_changed_line() {
    let file = lines("fn main() {\n    let x = 1;\n}\n");
    let block = lines("let x = 2;\n");
    assert!(!file
        .windows(block.len())
        .any(|window| window == block.as_slice()));
}
