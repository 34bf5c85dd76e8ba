//! The host's modules, and the modules of `wharf-connect` below them, depend on each other one way
//! only (ARCHITECTURE.md, "Who may use whom"). This reads every `crate::<module>` and
//! `wharf_connect::<module>` path in the sources of both crates and fails on an edge the table
//! below does not allow, so a new dependency is a decision written down here, not an accident.
//! (Cargo holds the seam between the crates: nothing in `wharf-connect` can name the host.)

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test: a failed unwrap is a failed test

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The crates whose modules are checked, each with the folder of its sources.
const CRATES: [&str; 2] = ["connect/src", "host/src"];

/// How a module of either crate is named in code: `crate::` inside its own crate, and
/// `wharf_connect::` for the modules of `wharf-connect` in the host.
const PREFIXES: [&str; 2] = ["crate::", "wharf_connect::"];

/// Each top-level module and the modules it may use. Lower layers first; `data`, `model`,
/// `convert` and `transform` are `wharf-connect`'s, the rest the host's.
const ALLOWED: &[(&str, &[&str])] = &[
    ("data", &[]),
    ("model", &["data"]),
    ("convert", &["data"]),
    ("sync", &[]),
    ("logging", &[]),
    ("metrics", &["model", "sync"]),
    ("peer", &["model"]),
    ("transform", &["convert", "data", "model"]),
    ("config", &["convert", "model", "transform"]),
    ("kafka", &["config", "metrics", "model", "sync"]),
    ("runtime", &["config", "data", "model", "sync"]),
    ("storage", &["config", "kafka", "model", "sync"]),
    ("cluster", &["config", "model", "storage", "sync"]),
    (
        "worker",
        &["cluster", "config", "convert", "kafka", "metrics", "model", "runtime", "storage", "sync", "transform"],
    ),
    (
        "herder",
        &["cluster", "config", "kafka", "logging", "metrics", "model", "peer", "runtime", "storage", "sync", "worker"],
    ),
    ("rest", &["config", "herder", "logging", "metrics", "model", "peer", "runtime"]),
    (
        "serve",
        &["cluster", "config", "herder", "kafka", "model", "peer", "rest", "runtime", "storage", "sync", "worker"],
    ),
    ("dev", &["config", "model", "serve"]),
    ("bench", &["config", "convert", "metrics", "model", "runtime", "transform"]),
    ("scaffold", &[]),
];

/// The module names used in Rust source text after `crate::` or `wharf_connect::`, comments left
/// out: in paths (`crate::model::Scalar`) and in groups (`use crate::{model, storage::Status};`),
/// over lines.
fn used_modules(source: &str) -> BTreeSet<String> {
    PREFIXES.iter().flat_map(|prefix| used_after(source, prefix)).collect()
}

fn used_after(source: &str, prefix: &str) -> BTreeSet<String> {
    let code: String = source
        .lines()
        .map(|line| line.trim_start())
        .filter(|line| !line.starts_with("//"))
        .map(|line| line.split(" //").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    let identifier = |text: &str| -> String {
        text.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
    };
    let mut used = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find(prefix) {
        // `crate::` inside another path (`wharf_connect::crate::`) is not a module of its own.
        if at > 0 && rest[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            rest = &rest[at + prefix.len()..];
            continue;
        }
        let after = &rest[prefix.len() + at..];
        if let Some(group) = after.strip_prefix('{') {
            // The first name of each entry at the group's own depth.
            let mut depth = 0;
            let mut entry_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => entry_start = true,
                    c if entry_start && !c.is_whitespace() => {
                        entry_start = false;
                        let name = identifier(&group[i..]);
                        if !name.is_empty() && name != "self" {
                            used.insert(name);
                        }
                    }
                    _ => {}
                }
            }
        } else {
            let name = identifier(after);
            if !name.is_empty() {
                used.insert(name);
            }
        }
        rest = after;
    }
    used
}

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path).unwrap().map(|entry| entry.unwrap().path()).collect();
        entries.sort();
        for entry in entries {
            rust_files(&entry, out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

#[test]
fn modules_depend_on_each_other_one_way_only() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut problems = Vec::new();
    for src in CRATES.map(|folder| workspace.join(folder)) {
        problems.extend(forbidden_edges(&src));
    }
    assert!(problems.is_empty(), "forbidden dependencies:\n{}", problems.join("\n"));
}

/// The edges of one crate's modules that the table does not allow, each said in a sentence.
fn forbidden_edges(src: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let module = path.file_stem().unwrap().to_string_lossy().to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        if path.is_file() && path.with_extension("").is_dir() {
            continue; // `scaffold.rs` beside `scaffold/`: counted with the folder's module
        }
        let Some((_, allowed)) = ALLOWED.iter().find(|(name, _)| *name == module) else {
            problems.push(format!("module {module} is not in the table of tests/dependencies.rs: give it its place"));
            continue;
        };
        let mut files = Vec::new();
        rust_files(&path, &mut files);
        let sibling = src.join(format!("{module}.rs"));
        if path.is_dir() && sibling.is_file() {
            files.push(sibling);
        }
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for used in used_modules(&text) {
                if used != module && !allowed.contains(&used.as_str()) {
                    problems.push(format!(
                        "{} uses {used}, which {module} may not use (ARCHITECTURE.md, \"Who may use whom\")",
                        file.strip_prefix(src).unwrap_or(&file).display()
                    ));
                }
            }
        }
    }
    problems
}

#[test]
fn the_scanner_finds_paths_in_code_and_skips_comments() {
    let source = "use crate::rest::forward;\n// crate::serve is only named here\nlet x = crate::model::Scalar::Null; // crate::dev\n";
    let used: Vec<String> = used_modules(source).into_iter().collect();
    assert_eq!(used, ["model", "rest"]);
}

#[test]
fn the_scanner_finds_the_modules_of_a_group_over_lines() {
    let source =
        "use crate::{\n    config::{keys, Mode},\n    // crate::dev\n    sync::Stop, self,\n};\nuse crate::{herder};";
    let used: Vec<String> = used_modules(source).into_iter().collect();
    assert_eq!(used, ["config", "herder", "sync"]);
}

#[test]
fn the_scanner_finds_the_modules_of_wharf_connect_used_from_the_host() {
    let source = "use wharf_connect::transform::Chain;\nlet v = wharf_connect::data::Value::Null;\nuse crate::worker;";
    let used: Vec<String> = used_modules(source).into_iter().collect();
    assert_eq!(used, ["data", "transform", "worker"]);
}

/// The table itself runs one way: no module may use, through others, a module that uses it.
#[test]
fn the_table_of_allowed_uses_has_no_cycle() {
    fn reaches(from: &str, to: &str, seen: &mut Vec<String>) -> bool {
        let Some((_, uses)) = ALLOWED.iter().find(|(name, _)| *name == from) else { return false };
        for next in uses.iter() {
            if *next == to {
                return true;
            }
            if !seen.iter().any(|s| s == next) {
                seen.push(next.to_string());
                if reaches(next, to, seen) {
                    return true;
                }
            }
        }
        false
    }
    for (module, _) in ALLOWED {
        assert!(!reaches(module, module, &mut Vec::new()), "{module} may use, through others, itself");
    }
}
