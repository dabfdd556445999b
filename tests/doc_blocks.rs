//! The Rust blocks of the README, the guides and the library's rustdoc that rustdoc
//! cannot compile as host doc tests (a kernel crate's code, a build script, programs
//! that embed a kernel crate's build output) are compiled as `examples/doc-blocks`: its
//! kernel crate is built to PTX for nvptx64 by the host package's build script
//! (sync-build), and the host package is a workspace member, so `cargo test
//! --workspace` compiles both. This test keeps the documents and those files equal:
//! each `ignore` block must stand in one of them line for line (indentation and blank
//! lines aside, as a fragment may sit inside a function there; rustdoc's hidden `# `
//! lines aside too).

use std::path::{Path, PathBuf};

/// The Markdown documents whose `rust,ignore` blocks are checked.
const DOCUMENTS: [&str; 2] = ["README.md", "docs/kernel-crates.md"];
/// The library crates whose rustdoc `ignore` blocks are checked.
const LIBRARY_SOURCES: [&str; 5] = [
    "src",
    "sync-shared/src",
    "sync-device/src",
    "sync-host/src",
    "sync-build/src",
];
/// Where the blocks are compiled.
const HOMES: &str = "examples/doc-blocks";

/// One uncompiled block: where it is, and its text.
struct Block {
    origin: String,
    text: String,
}

/// The lines of `text` as the comparison sees them: trimmed, blank ones dropped.
fn lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect()
}

/// Whether a fence line opens a block that rustdoc does not compile.
fn opens_ignored(fence: &str) -> bool {
    let info = fence.trim().trim_start_matches("```");
    fence.trim().starts_with("```") && info.split(',').any(|word| word.trim() == "ignore")
}

/// The ignored blocks among `lines` (already stripped of any comment prefix), with
/// rustdoc's hidden lines (`# ...`) dropped when `hidden` says the text is rustdoc.
fn ignored_blocks(origin: &str, text_lines: &[String], hidden: bool) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, Vec<&str>)> = None;
    for (number, line) in text_lines.iter().enumerate() {
        if let Some((start, body)) = open.as_mut() {
            if line.trim().starts_with("```") {
                blocks.push(Block {
                    origin: format!("{origin}:{start}"),
                    text: body.join("\n"),
                });
                open = None;
            } else if !(hidden && (line.trim() == "#" || line.trim().starts_with("# "))) {
                body.push(line);
            }
        } else if opens_ignored(line) {
            open = Some((number + 1, Vec::new()));
        }
    }
    assert!(open.is_none(), "{origin}: an unclosed code block");
    blocks
}

/// A source file's doc comment lines (`///`, `//!`), without the comment marker; other
/// lines become blank, which ends no block (a doc block never spans code).
fn doc_lines(source: &str) -> Vec<String> {
    source
        .lines()
        .map(|line| {
            let line = line.trim_start();
            ["//! ", "/// ", "//!", "///"]
                .iter()
                .find_map(|marker| line.strip_prefix(marker))
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|error| panic!("{dir:?}: {error}")) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name == "target") {
                continue;
            }
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Every uncompiled block of the documents and the library sources.
fn all_blocks() -> Vec<Block> {
    let mut blocks = Vec::new();
    for document in DOCUMENTS {
        let text = std::fs::read_to_string(root().join(document)).expect(document);
        let text_lines: Vec<String> = text.lines().map(str::to_owned).collect();
        blocks.extend(ignored_blocks(document, &text_lines, false));
    }
    for dir in LIBRARY_SOURCES {
        for file in rust_files(&root().join(dir)) {
            let source = std::fs::read_to_string(&file).expect("a source file");
            blocks.extend(ignored_blocks(&relative(&file), &doc_lines(&source), true));
        }
    }
    blocks
}

/// Whether `block` stands, line for line, in `file`.
fn stands_in(block: &str, file: &str) -> bool {
    let (block, file) = (lines(block), lines(file));
    !block.is_empty()
        && file
            .windows(block.len())
            .any(|window| window == block.as_slice())
}

#[test]
fn every_uncompiled_block_stands_in_a_compiled_file() {
    let homes: Vec<(String, String)> = rust_files(&root().join(HOMES))
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a home file");
            (relative(&path), text)
        })
        .collect();
    let blocks = all_blocks();
    let missing: Vec<String> = blocks
        .iter()
        .filter(|block| !homes.iter().any(|(_, text)| stands_in(&block.text, text)))
        .map(|block| format!("{}:\n{}", block.origin, block.text))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} ignored blocks stand in no file of {HOMES} (give each a home there, \
         as written):\n\n{}",
        missing.len(),
        blocks.len(),
        missing.join("\n\n")
    );
}

#[test]
fn the_check_finds_the_blocks_of_every_kind() {
    let blocks = all_blocks();
    let from = |origin: &str| {
        blocks
            .iter()
            .filter(|b| b.origin.starts_with(origin))
            .count()
    };
    // The README's kernel crate, build script, host program and the worker's two sides;
    // rustdoc blocks of both backends and of the build helper.
    assert!(
        from("README.md") >= 5,
        "README blocks: {}",
        from("README.md")
    );
    assert!(from("sync-device/") >= 8);
    assert!(from("sync-host/") >= 2);
    assert!(from("sync-build/") >= 1);
}

#[test]
fn the_check_notices_a_changed_line_and_drops_hidden_ones() {
    assert!(!stands_in(
        "let x = 2;\n",
        "fn main() {\n    let x = 1;\n}\n"
    ));
    assert!(stands_in(
        "let x = 1;\n",
        "fn main() {\n    let x = 1;\n}\n"
    ));
    let source = "/// ```ignore\n/// # fn main() {\n/// let x = 1;\n/// # }\n/// ```\nfn f() {}\n";
    let blocks = ignored_blocks("t.rs", &doc_lines(source), true);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].text, "let x = 1;");
    let markdown: Vec<String> = [
        "```rust",
        "checked();",
        "```",
        "```rust,ignore",
        "home();",
        "```",
    ]
    .map(str::to_owned)
    .to_vec();
    let blocks = ignored_blocks("t.md", &markdown, false);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].text, "home();");
}
