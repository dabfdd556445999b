//! Keeps the CUDA C++ header `include/scoped_sync.cuh` in step with the Rust side.
//!
//! - The header's block between `// BEGIN GENERATED LAYOUT` and `// END GENERATED
//!   LAYOUT` (the objects' storage structs, their `static_assert`s, the status codes) is
//!   rendered here from `sync_shared::layout` and from the status constants of
//!   `sync-device/src/c_abi/mod.rs`; the test fails where the header's block differs.
//!   `SCOPED_SYNC_BLESS=1 cargo test --test cxx_header` rewrites the block in place.
//! - Every `ss_*` function the header declares must be exported by the Rust C ABI
//!   (`sync-device/src/c_abi/*.rs`), and the reverse as far as the sources show it (see
//!   [`c_abi_exports_every_declared_function`]). This is a check on names only: the exact
//!   check of the C types is the device link of `scripts/cxx-check.sh`, where nvlink
//!   compares every prototype with the library's.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sync_shared::layout::{self, Layout};

const BEGIN: &str = "// BEGIN GENERATED LAYOUT (scoped-sync: cargo test --test cxx_header; SCOPED_SYNC_BLESS=1 rewrites it)";
const END: &str = "// END GENERATED LAYOUT";
const BLESS: &str = "SCOPED_SYNC_BLESS";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn header_path() -> PathBuf {
    root().join("include/scoped_sync.cuh")
}

fn c_abi_dir() -> PathBuf {
    root().join("sync-device/src/c_abi")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()))
}

/// The opaque storage structs: C name, the Rust constant's name, its layout.
const STORAGE: [(&str, &str, Layout); 17] = [
    ("ss_barrier", "BARRIER", layout::BARRIER),
    (
        "ss_barrier_completion",
        "BARRIER_WITH_COMPLETION",
        layout::BARRIER_WITH_COMPLETION,
    ),
    ("ss_latch", "LATCH", layout::LATCH),
    (
        "ss_counting_semaphore",
        "COUNTING_SEMAPHORE",
        layout::COUNTING_SEMAPHORE,
    ),
    (
        "ss_fair_semaphore",
        "FAIR_SEMAPHORE",
        layout::FAIR_SEMAPHORE,
    ),
    ("ss_waiter_slot", "WAITER_SLOT", layout::WAITER_SLOT),
    ("ss_stop_source", "STOP_SOURCE", layout::STOP_SOURCE),
    ("ss_stop_callback", "STOP_CALLBACK", layout::STOP_CALLBACK),
    (
        "ss_arrival_token",
        "ARRIVAL_TOKEN_STORAGE",
        layout::ARRIVAL_TOKEN_STORAGE,
    ),
    (
        "ss_handoff_channel",
        "HANDOFF_CHANNEL",
        layout::HANDOFF_CHANNEL,
    ),
    (
        "ss_handoff_semaphore",
        "HANDOFF_SEMAPHORE",
        layout::HANDOFF_SEMAPHORE,
    ),
    ("ss_endpoint", "HANDOFF_ENDPOINT", layout::HANDOFF_ENDPOINT),
    (
        "ss_bus_stop_source",
        "BUS_STOP_SOURCE",
        layout::BUS_STOP_SOURCE,
    ),
    ("ss_bus_barrier", "BUS_BARRIER", layout::BUS_BARRIER),
    ("ss_bus_latch", "BUS_LATCH", layout::BUS_LATCH),
    (
        "ss_bus_arrival_token",
        "BUS_ARRIVAL_TOKEN",
        layout::BUS_ARRIVAL_TOKEN,
    ),
    ("ss_multi_grid", "MULTI_GRID", layout::MULTI_GRID),
];

/// The fields of `ss_grid` (`sync_device::Grid`, sync-device/src/primitives/grid.rs):
/// C declaration, name, size (= alignment) on a 64-bit target.
const GRID_FIELDS: [(&str, &str, usize); 3] = [
    ("unsigned int*", "arrivals", 8),
    ("unsigned int", "phase", 4),
    ("unsigned int", "reserved", 4),
];

/// The C ABI's status codes, `(name, value)`, in the order of `c_abi/mod.rs`, and the
/// value of its `FOREVER`.
fn status_codes() -> (Vec<(String, u32)>, u64) {
    let path = c_abi_dir().join("mod.rs");
    let source = read(&path);
    let mut codes = Vec::new();
    let mut forever = None;
    for line in source.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("pub const SS_") {
            let (name, value) = rest
                .strip_suffix(';')
                .and_then(|rest| rest.split_once(": u32 = "))
                .unwrap_or_else(|| {
                    panic!(
                        "{}: cannot read `{line}` (expected `pub const SS_X: u32 = N;`)",
                        path.display()
                    )
                });
            let value = value
                .parse()
                .unwrap_or_else(|_| panic!("{}: `{line}`: not an integer", path.display()));
            codes.push((format!("SS_{name}"), value));
        } else if let Some(rest) = line.strip_prefix("pub const FOREVER: u64 = ") {
            forever = Some(match rest.trim_end_matches(';') {
                "u64::MAX" => u64::MAX,
                value => value
                    .parse()
                    .unwrap_or_else(|_| panic!("{}: `{line}`: not an integer", path.display())),
            });
        }
    }
    assert_eq!(
        codes.first().map(|(name, value)| (name.as_str(), *value)),
        Some(("SS_OK", 0)),
        "{}: no `SS_OK = 0`",
        path.display()
    );
    (
        codes,
        forever.unwrap_or_else(|| panic!("{}: no `pub const FOREVER: u64`", path.display())),
    )
}

/// The generated block, markers included, each line ending in `\n`.
fn render() -> String {
    let mut out = String::new();
    let mut line = |text: &str| {
        out.push_str(text);
        out.push('\n');
    };
    line(BEGIN);
    line("// Generated by tests/cxx_header.rs from sync_shared::layout and sync-device/src/c_abi/mod.rs.");
    line("");
    for (name, constant, layout) in STORAGE {
        line(&format!(
            "struct alignas({}) {name} {{ unsigned char opaque[{}]; }};  // layout::{constant}",
            layout.align, layout.size
        ));
    }
    // `ss_grid`: its fields are the kernel parameter's, at their natural offsets.
    let mut offsets = Vec::new();
    let mut size = 0_usize;
    let mut align = 1_usize;
    for (_, _, field) in GRID_FIELDS {
        size = size.next_multiple_of(field);
        offsets.push(size);
        size += field;
        align = align.max(field);
    }
    let size = size.next_multiple_of(align);
    assert_eq!(
        Layout { size, align },
        layout::GRID,
        "GRID_FIELDS (tests/cxx_header.rs) no longer match layout::GRID: update them to sync_device::Grid's fields"
    );
    line(&format!("struct alignas({align}) ss_grid {{  // layout::GRID: sync_device::Grid, a kernel parameter"));
    for (ty, name, _) in GRID_FIELDS {
        line(&format!("    {ty} {name};"));
    }
    line("};");
    line("");
    for (name, constant, layout) in
        STORAGE
            .iter()
            .copied()
            .chain([("ss_grid", "GRID", layout::GRID)])
    {
        line(&format!(
            "static_assert(sizeof({name}) == {} && alignof({name}) == {}, \"{name}: size or alignment differs from layout::{constant}\");",
            layout.size, layout.align
        ));
    }
    // NVRTC's front end has no `__builtin_offsetof` (and no <cstddef>): nvcc checks
    // the offsets, NVRTC the size and alignment.
    line("#ifndef __CUDACC_RTC__");
    for ((_, field, _), offset) in GRID_FIELDS.iter().zip(&offsets) {
        line(&format!(
            "static_assert(__builtin_offsetof(ss_grid, {field}) == {offset}, \"ss_grid::{field}: offset differs from sync_device::Grid\");"
        ));
    }
    line("#endif");
    line("");
    let (codes, forever) = status_codes();
    for (name, value) in codes {
        line(&format!("constexpr unsigned int {name} = {value};"));
    }
    line(&format!(
        "constexpr unsigned long long SS_FOREVER = {forever:#x}ull;"
    ));
    line(&format!(
        "constexpr unsigned int SS_SEMAPHORE_MAX = {};",
        sync_shared::SEMAPHORE_MAX
    ));
    // The grid barrier's words (`layout::grid`) and the barrier's portable encoding, for
    // the header's inline phases.
    use sync_shared::barrier::encoding;
    for (name, value) in [
        ("SS_BARRIER_PARITY", encoding::PARITY),
        ("SS_BARRIER_OPEN", encoding::OPEN),
        ("SS_BARRIER_UNIT", encoding::UNIT),
        ("SS_BARRIER_DROPPED", encoding::DROPPED),
        ("SS_BARRIER_EXPECTED", encoding::EXPECTED),
        ("SS_GRID_LINE_WORDS", layout::grid::GRID_LINE_WORDS as u32),
        ("SS_GRID_GROUP_BLOCKS", layout::grid::GRID_GROUP_BLOCKS),
        ("SS_GRID_TWO_LEVEL_FROM", layout::grid::GRID_TWO_LEVEL_FROM),
        (
            "SS_PRODUCER_PUBLISHED_OFFSET",
            layout::handoff_producer::PUBLISHED as u32,
        ),
        (
            "SS_PRODUCER_COUNT_OFFSET",
            layout::handoff_producer::COUNT as u32,
        ),
        (
            "SS_PRODUCER_READING_PE_OFFSET",
            layout::handoff_producer::READING_PE as u32,
        ),
        (
            "SS_CONSUMER_PUBLISHED_OFFSET",
            layout::handoff_consumer::PUBLISHED as u32,
        ),
        (
            "SS_CONSUMER_TAKEN_OFFSET",
            layout::handoff_consumer::TAKEN as u32,
        ),
        (
            "SS_CONSUMER_INLINE_POLLS",
            layout::handoff_consumer::INLINE_POLLS,
        ),
    ] {
        line(&format!("constexpr unsigned int {name} = {value};"));
    }
    // The exclusive producer's inline release checks its count against it.
    line(&format!(
        "constexpr unsigned long long SS_BUS_COUNT_MAX = {:#x}ull;",
        sync_shared::bus::BUS_COUNT_MAX
    ));
    line(END);
    out
}

/// The header's generated block (markers included) and the byte range it spans.
fn generated_block(header: &str) -> Result<(usize, usize), String> {
    let start = header
        .find(&format!("{BEGIN}\n"))
        .ok_or_else(|| format!("no line `{BEGIN}` in the header"))?;
    let end_marker = format!("{END}\n");
    let end = header[start..]
        .find(&end_marker)
        .map(|at| start + at + end_marker.len())
        .ok_or_else(|| format!("no line `{END}` after the BEGIN line in the header"))?;
    if header[end..].contains(BEGIN) || header[end..].contains(END) {
        return Err("the header has more than one generated block".into());
    }
    Ok((start, end))
}

/// `Ok` where `header`'s generated block is `expected`; else what differs.
fn compare(header: &str, expected: &str) -> Result<(), String> {
    let (start, end) = generated_block(header)?;
    let actual = &header[start..end];
    if actual == expected {
        return Ok(());
    }
    let mut message =
        String::from("the header's generated layout block differs from the Rust constants");
    let line = actual
        .lines()
        .zip(expected.lines())
        .position(|(a, e)| a != e);
    match line {
        Some(index) => {
            let _ = write!(
                message,
                "; first difference at line {} of the block:\n  header:   {}\n  expected: {}",
                index + 1,
                actual.lines().nth(index).unwrap_or_default(),
                expected.lines().nth(index).unwrap_or_default()
            );
        }
        None => {
            let _ = write!(
                message,
                " (the header's has {} lines, expected {})",
                actual.lines().count(),
                expected.lines().count()
            );
        }
    }
    Err(message)
}

#[test]
fn generated_layout_block_matches_the_rust_constants() {
    let path = header_path();
    let header = read(&path);
    let expected = render();
    let Err(problem) = compare(&header, &expected) else {
        return;
    };
    if std::env::var_os(BLESS).is_some_and(|value| value != "0") {
        let (start, end) =
            generated_block(&header).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let blessed = format!("{}{expected}{}", &header[..start], &header[end..]);
        std::fs::write(&path, blessed)
            .unwrap_or_else(|error| panic!("writing {}: {error}", path.display()));
        eprintln!("{BLESS}: rewrote the generated block of {}", path.display());
        return;
    }
    panic!(
        "{}: {problem}\nRun `{BLESS}=1 cargo test --test cxx_header` to rewrite the block, then rebuild the C++ \
         side (scripts/cxx-check.sh).",
        path.display()
    );
}

#[test]
fn a_changed_block_is_caught() {
    let expected = render();
    let header = format!("#pragma once\n{expected}// rest\n");
    assert_eq!(compare(&header, &expected), Ok(()));
    let changed = header.replacen("opaque[16]", "opaque[17]", 1);
    assert_ne!(changed, header);
    assert!(compare(&changed, &expected)
        .unwrap_err()
        .contains("opaque[17]"));
    let shorter = header.replacen("constexpr unsigned int SS_OK = 0;\n", "", 1);
    assert!(compare(&shorter, &expected).is_err());
    assert!(compare("#pragma once\n", &expected).is_err());
}

// ---- names -----------------------------------------------------------------------------

/// A function the header declares in its `extern "C"` block, and whether it lies inside
/// `#if SCOPED_SYNC_HAS_CLUSTER` (the sm_90-only part).
#[derive(Debug)]
struct Declared {
    name: String,
    cluster_guarded: bool,
}

fn is_ident(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// The `ss_*` identifiers of `line` followed by `(`: the functions it declares.
fn functions_in(line: &str) -> Vec<String> {
    let bytes = line.as_bytes();
    let mut names = Vec::new();
    let mut at = 0;
    while let Some(found) = line[at..].find("ss_") {
        let start = at + found;
        let mut end = start;
        while end < bytes.len() && is_ident(bytes[end]) {
            end += 1;
        }
        let starts_word = start == 0 || !is_ident(bytes[start - 1]);
        if starts_word && line[end..].trim_start().starts_with('(') {
            names.push(line[start..end].to_string());
        }
        at = end.max(start + 1);
    }
    names
}

/// Every function the header's `extern "C" { ... }  // extern "C"` block declares.
fn declared_functions(header: &str) -> Vec<Declared> {
    let begin = header
        .find("extern \"C\" {\n")
        .expect("the header has no `extern \"C\" {` block");
    let end = begin
        + header[begin..]
            .find("}  // extern \"C\"")
            .expect("the header's `extern \"C\"` block has no `}  // extern \"C\"` end");
    let mut declared = Vec::new();
    let mut guards: Vec<bool> = Vec::new();
    for line in header[begin..end].lines() {
        let trimmed = line.trim();
        if let Some(condition) = trimmed.strip_prefix("#if") {
            guards.push(condition.trim() == "SCOPED_SYNC_HAS_CLUSTER");
        } else if trimmed.starts_with("#endif") {
            guards
                .pop()
                .expect("unbalanced #endif in the extern \"C\" block");
        } else if !trimmed.starts_with("//") {
            for name in functions_in(line) {
                declared.push(Declared {
                    name,
                    cluster_guarded: guards.contains(&true),
                });
            }
        }
    }
    assert!(
        guards.is_empty(),
        "unbalanced #if in the extern \"C\" block"
    );
    declared
}

/// What one `c_abi` source file exports, as far as its text shows.
#[derive(Debug, Default)]
struct Exports {
    /// `#[no_mangle] pub [unsafe] extern "C" fn NAME`.
    plain: BTreeSet<String>,
    /// String literals `"ss_..."`: the name prefixes macros are invoked with, and
    /// whether the invocation is `#[cfg(target_feature = "sm_90")]`.
    prefixes: Vec<(String, bool)>,
    /// `export_name = concat!($prefix, "_suffix")` suffixes.
    suffixes: BTreeSet<String>,
}

fn exports_of(source: &str) -> Exports {
    let mut exports = Exports::default();
    let mut previous = "";
    // Inside an item under `#[cfg(target_feature = "sm_90")]` (a macro invocation may
    // span lines, as rustfmt writes long ones): up to the line ending in `;`.
    let mut sm_90 = false;
    for line in source.lines().map(str::trim) {
        if line.starts_with("#[cfg(target_feature = \"sm_90\")]") {
            sm_90 = true;
        }
        if previous == "#[no_mangle]" {
            if let Some(name) = line
                .split_once("extern \"C\" fn ")
                .and_then(|(_, rest)| rest.split_once('('))
                .map(|(name, _)| name.trim())
            {
                exports.plain.insert(name.to_string());
            }
        }
        if let Some((_, rest)) = line.split_once("export_name = concat!($") {
            let suffix = rest
                .split_once(", \"")
                .and_then(|(_, rest)| rest.split_once("\")]"))
                .map(|(suffix, _)| suffix)
                .unwrap_or_else(|| panic!("cannot read the suffix of `{line}`"));
            exports.suffixes.insert(suffix.to_string());
        } else if !line.starts_with("//") {
            let mut rest = line;
            while let Some((_, after)) = rest.split_once("\"ss_") {
                let Some((literal, tail)) = after.split_once('"') else {
                    break;
                };
                exports.prefixes.push((format!("ss_{literal}"), sm_90));
                rest = tail;
            }
        }
        if line.ends_with(';') || line.ends_with('}') {
            sm_90 = false;
        }
        if !line.is_empty() {
            previous = line;
        }
    }
    exports
}

fn c_abi_sources() -> Vec<(PathBuf, String)> {
    let mut files: Vec<_> = std::fs::read_dir(c_abi_dir())
        .expect("reading sync-device/src/c_abi")
        .map(|entry| entry.expect("reading sync-device/src/c_abi").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no sources in sync-device/src/c_abi");
    files
        .into_iter()
        .map(|path| {
            let text = read(&path);
            (path, text)
        })
        .collect()
}

/// How `name` is exported by a file of `sources`, or `None`: a `#[no_mangle]` function
/// of that name, or a prefix literal and an `export_name` suffix of the same file that
/// spell it (a macro's expansion; whether that macro pairs them is not checked here,
/// the device link is). The flag says whether the export is sm_90-only.
fn exported(name: &str, sources: &[(PathBuf, Exports)]) -> Option<(PathBuf, bool)> {
    for (path, exports) in sources {
        if exports.plain.contains(name) {
            return Some((path.clone(), false));
        }
        for (prefix, sm_90) in &exports.prefixes {
            if let Some(suffix) = name.strip_prefix(prefix.as_str()) {
                if exports.suffixes.contains(suffix) {
                    return Some((path.clone(), *sm_90));
                }
            }
        }
    }
    None
}

#[test]
fn c_abi_exports_every_declared_function() {
    let header = read(&header_path());
    let declared = declared_functions(&header);
    let sources: Vec<(PathBuf, Exports)> = c_abi_sources()
        .into_iter()
        .map(|(path, text)| (path, exports_of(&text)))
        .collect();

    // The parse found the whole ABI, not a part of it.
    assert!(
        declared.len() >= 300,
        "only {} functions declared in the header's extern \"C\" block",
        declared.len()
    );
    let mut seen = BTreeSet::new();
    let mut problems = Vec::new();
    for Declared {
        name,
        cluster_guarded,
    } in &declared
    {
        if !seen.insert(name.as_str()) {
            problems.push(format!("{name}: declared twice"));
        }
        match exported(name, &sources) {
            None => problems.push(format!(
                "{name}: declared in the header, exported by no file of sync-device/src/c_abi"
            )),
            Some((path, sm_90)) if sm_90 != *cluster_guarded => problems.push(format!(
                "{name}: {} in {} but {} in the header (cluster functions are sm_90-only: \
                 `#[cfg(target_feature = \"sm_90\")]` there, `#if SCOPED_SYNC_HAS_CLUSTER` here)",
                if sm_90 {
                    "sm_90-only"
                } else {
                    "for every target"
                },
                path.display(),
                if *cluster_guarded {
                    "guarded"
                } else {
                    "unguarded"
                },
            )),
            Some(_) => {}
        }
    }
    // The reverse, as far as names show: every plain export is declared, and every
    // prefix and suffix the macros export is part of a declared name.
    for (path, exports) in &sources {
        for name in &exports.plain {
            if !seen.contains(name.as_str()) {
                problems.push(format!(
                    "{name}: exported by {}, not declared in the header",
                    path.display()
                ));
            }
        }
        for (prefix, _) in &exports.prefixes {
            if !seen.iter().any(|name| name.starts_with(prefix.as_str())) {
                problems.push(format!(
                    "prefix {prefix} of {}: no declared function starts with it",
                    path.display()
                ));
            }
        }
        for suffix in &exports.suffixes {
            let ok = exports
                .prefixes
                .iter()
                .any(|(prefix, _)| seen.contains(format!("{prefix}{suffix}").as_str()));
            if !ok {
                problems.push(format!(
                    "suffix {suffix} of {}: no declared function ends with it",
                    path.display()
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the header and sync-device/src/c_abi disagree:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn the_name_check_rejects_what_is_not_exported() {
    let sources: Vec<(PathBuf, Exports)> = c_abi_sources()
        .into_iter()
        .map(|(path, text)| (path, exports_of(&text)))
        .collect();
    assert!(exported("ss_barrier_device_arrive_and_wait", &sources).is_some());
    assert!(exported("ss_barrier_max", &sources).is_some());
    assert!(exported("ss_barrier_device_frobnicate", &sources).is_none());
    assert!(exported("ss_no_such_object_wait", &sources).is_none());
    assert_eq!(
        exported("ss_latch_cluster_wait", &sources).map(|(_, sm_90)| sm_90),
        Some(true)
    );
    let declared = declared_functions("extern \"C\" {\n__device__ void ss_a(ss_barrier* b);\n#if SCOPED_SYNC_HAS_CLUSTER\n__device__ bool ss_b_cluster_c(void);\n#endif\n}  // extern \"C\"\n");
    let names: Vec<_> = declared
        .iter()
        .map(|d| (d.name.as_str(), d.cluster_guarded))
        .collect();
    assert_eq!(names, [("ss_a", false), ("ss_b_cluster_c", true)]);
}
