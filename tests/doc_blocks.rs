//! The Rust blocks of the README, the crates' READMEs, the guides in `docs/` and the
//! library's rustdoc that rustdoc cannot compile as host doc tests (a kernel crate's
//! code, a build script, programs that embed a kernel crate's build output) are
//! compiled as `examples/doc-blocks`: its kernel crate is built to PTX for nvptx64 by
//! the host package's build script (sync-build; the test command sets
//! `SYNC_BUILD_REQUIRED=1`, so a missing nightly toolchain fails the build instead of
//! skipping the kernels), and the host package is a workspace member, so `cargo test
//! --workspace` compiles both. This test keeps the documents and those files equal:
//! each `ignore` block must stand, line for line, in one of them or in a compiled doc
//! test of the library (indentation and blank lines aside, as a fragment may sit inside
//! a function there; rustdoc's hidden `# ` lines aside too).

use std::path::{Path, PathBuf};

/// The Markdown documents whose `ignore` blocks are checked: these, every `.md` file
/// of `docs/`, and the crates' READMEs.
const DOCUMENTS: [&str; 5] = [
    "README.md",
    "sync-build/README.md",
    "sync-device/README.md",
    "sync-host/README.md",
    "sync-shared/README.md",
];
const GUIDES: &str = "docs";
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

/// The info string of a fence line (```` ```rust,ignore ```` or `~~~`), if it is one.
fn fence_info(line: &str) -> Option<&str> {
    let line = line.trim();
    ["```", "~~~"]
        .iter()
        .find_map(|fence| line.strip_prefix(fence))
}

/// The words of a fence's info string (rustdoc splits on commas and spaces).
fn info_words(info: &str) -> impl Iterator<Item = &str> {
    info.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|word| !word.is_empty())
}

/// Whether a fence line opens a block that rustdoc does not compile.
fn opens_ignored(fence: &str) -> bool {
    fence_info(fence).is_some_and(|info| info_words(info).any(|word| word == "ignore"))
}

/// Whether a fence line of a doc comment opens a block that rustdoc compiles as a doc
/// test (Rust, not `ignore`, `text` or another language).
fn opens_compiled(fence: &str) -> bool {
    fence_info(fence).is_some_and(|info| {
        info_words(info).all(|word| {
            matches!(
                word,
                "rust" | "no_run" | "should_panic" | "compile_fail" | "edition2021"
            )
        })
    })
}

/// The ignored blocks among `lines` (already stripped of any comment prefix), with
/// rustdoc's hidden lines (`# ...`) dropped when `hidden` says the text is rustdoc.
fn ignored_blocks(origin: &str, text_lines: &[String], hidden: bool) -> Vec<Block> {
    blocks_opened_by(origin, text_lines, hidden, opens_ignored)
}

/// The blocks among `lines` whose opening fence `opens` accepts, as [`ignored_blocks`].
fn blocks_opened_by(
    origin: &str,
    text_lines: &[String],
    hidden: bool,
    opens: fn(&str) -> bool,
) -> Vec<Block> {
    let mut blocks = Vec::new();
    // The block being read: where it opened, whether it is kept, its lines so far.
    let mut open: Option<(usize, bool, Vec<&str>)> = None;
    for (number, line) in text_lines.iter().enumerate() {
        let fence = fence_info(line).is_some();
        match open.as_mut() {
            None if fence => open = Some((number + 1, opens(line), Vec::new())),
            None => {}
            Some((start, kept, body)) if fence => {
                if *kept {
                    blocks.push(Block {
                        origin: format!("{origin}:{start}"),
                        text: body.join("\n"),
                    });
                }
                open = None;
            }
            // rustdoc's hidden lines are not shown, so not compared.
            Some(_) if hidden && (line.trim() == "#" || line.trim().starts_with("# ")) => {}
            Some((_, _, body)) => body.push(line),
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

/// The Markdown documents checked: [`DOCUMENTS`] and every `.md` file of [`GUIDES`].
fn documents() -> Vec<String> {
    let mut documents: Vec<String> = DOCUMENTS.iter().map(|&name| name.to_owned()).collect();
    let mut guides: Vec<String> = std::fs::read_dir(root().join(GUIDES))
        .expect("docs/")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| relative(&path))
        .collect();
    guides.sort();
    documents.extend(guides);
    documents
}

/// The doc-comment blocks of the library sources that `opens` accepts.
fn library_blocks(opens: fn(&str) -> bool) -> Vec<Block> {
    let mut blocks = Vec::new();
    for dir in LIBRARY_SOURCES {
        for file in rust_files(&root().join(dir)) {
            let source = std::fs::read_to_string(&file).expect("a source file");
            blocks.extend(blocks_opened_by(
                &relative(&file),
                &doc_lines(&source),
                true,
                opens,
            ));
        }
    }
    blocks
}

/// Every uncompiled block of the documents and the library sources.
fn all_blocks() -> Vec<Block> {
    let mut blocks = Vec::new();
    for document in documents() {
        let text = std::fs::read_to_string(root().join(&document)).expect("a document");
        let text_lines: Vec<String> = text.lines().map(str::to_owned).collect();
        blocks.extend(ignored_blocks(&document, &text_lines, false));
    }
    blocks.extend(library_blocks(opens_ignored));
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
    // The compiled files, and the library's compiled doc tests (a guide may show one).
    let mut homes: Vec<(String, String)> = rust_files(&root().join(HOMES))
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a home file");
            (relative(&path), text)
        })
        .collect();
    homes.extend(
        library_blocks(opens_compiled)
            .into_iter()
            .map(|block| (block.origin, block.text)),
    );
    let blocks = all_blocks();
    let missing: Vec<String> = blocks
        .iter()
        .filter(|block| !homes.iter().any(|(_, text)| stands_in(&block.text, text)))
        .map(|block| format!("{}:\n{}", block.origin, block.text))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} ignored blocks stand in no file of {HOMES} (give each a home there, \
         as written, or in a compiled doc test):\n\n{}",
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
    assert!(from("sync-build/") >= 2);
    assert!(from("docs/") >= 3);
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
    // Fences as rustdoc reads them: `~~~`, words split by spaces too; a compiled block
    // is a doc test, a `text` block neither.
    let markdown: Vec<String> = ["~~~rust ignore", "a();", "~~~", "```text", "b();", "```"]
        .map(str::to_owned)
        .to_vec();
    let blocks = ignored_blocks("t.md", &markdown, false);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].text, "a();");
    assert!(opens_compiled("```no_run") && opens_compiled("```") && opens_compiled("```rust"));
    assert!(!opens_compiled("```text") && !opens_compiled("```rust,ignore"));
}
