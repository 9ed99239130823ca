//! The layering rule: data flows UCI → engine → search → evaluator → backend, so the layers below
//! the engine never name the protocol layer. Every Rust file under `src/search`, `src/model` and
//! `src/bench` (and `src/bench.rs`, `src/settings.rs`, `src/time.rs`, `src/tablebase.rs`,
//! `src/game.rs`) is read, and any reference to the `uci` module fails the test with file:line.

use std::fs;
use std::path::{Path, PathBuf};

/// The paths, relative to the crate root, that must not reach `crate::uci`.
const BELOW_THE_ENGINE: &[&str] = &[
    "src/search",
    "src/model",
    "src/bench",
    "src/bench.rs",
    "src/settings.rs",
    "src/time.rs",
    "src/tablebase.rs",
    "src/game.rs",
];

/// Every `.rs` file at or below `path`.
fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = fs::read_dir(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .map(|e| e.expect("directory entry").path())
            .collect();
        entries.sort();
        for p in entries {
            rust_files(&p, out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

/// The 1-based numbers and text of the lines of `text` that refer to the `uci` module
/// (`crate::uci`, `glimpse::uci`, `super::uci`, or `uci::` at the start of a `use` path).
fn uci_references(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let code = line.split("//").next().unwrap_or("");
            let t = code.trim_start();
            ["crate::uci", "glimpse::uci", "super::uci"]
                .iter()
                .any(|p| code.contains(p))
                || t.starts_with("use uci::")
                || t.starts_with("pub use uci::")
        })
        .map(|(i, line)| (i + 1, line.trim().to_string()))
        .collect()
}

#[test]
fn the_search_model_and_bench_never_name_the_uci_layer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for p in BELOW_THE_ENGINE {
        let path = root.join(p);
        assert!(path.exists(), "{} is gone: update the list", path.display());
        rust_files(&path, &mut files);
    }
    assert!(files.len() > 40, "only {} files found", files.len());
    let offences: Vec<String> = files
        .iter()
        .flat_map(|f| {
            let text = fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let rel = f.strip_prefix(root).unwrap_or(f).display().to_string();
            uci_references(&text)
                .into_iter()
                .map(move |(n, line)| format!("{rel}:{n}: {line}"))
        })
        .collect();
    assert!(
        offences.is_empty(),
        "the layers below the engine refer to crate::uci (report through \
         search::report::Listener, read crate::settings::Settings and search::GoParams instead):\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_check_finds_a_reference() {
    let text = "//! doc\nuse crate::uci::out::Out;\nfn f() {}\n    let s = crate::uci::options::Options::new(1);\n// crate::uci in a comment\n";
    let found = uci_references(text);
    assert_eq!(
        found.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        vec![2, 4],
        "{found:?}"
    );
    assert!(uci_references("use crate::search::report::Info;\n").is_empty());
}
