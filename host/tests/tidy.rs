//! Rules of the house that the compiler cannot hold, held here instead (as rust-analyzer's
//! `tidy` holds its own): the herder stays cut along its thread boundary.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

/// The largest a file of `herder/` may grow before it is cut again.
const HERDER_FILE_LINES: usize = 900;

fn herder_files() -> Vec<(PathBuf, String)> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/herder");
    let mut files: Vec<(PathBuf, String)> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            (path, text)
        })
        .collect();
    files.sort();
    assert!(files.len() >= 5, "herder/ was not found where this test looks: {}", folder.display());
    files
}

/// Code without its comments, so that a rule's own name in a sentence does not break it.
fn code(text: &str) -> String {
    text.lines().map(|line| line.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

#[test]
fn no_file_of_the_herder_grows_past_its_bound() {
    for (path, text) in herder_files() {
        let lines = text.lines().count();
        assert!(
            lines <= HERDER_FILE_LINES,
            "{} has {lines} lines, over {HERDER_FILE_LINES}: cut it along what it does",
            path.display()
        );
    }
}

/// The state of the herder's rounds is `HerderLoop`'s own (`self`), never a parameter that a
/// type every thread holds passes around.
#[test]
fn the_loops_state_is_never_a_parameter() {
    for (path, text) in herder_files() {
        for forbidden in ["&mut Owned", "owned: &mut"] {
            assert!(
                !code(&text).contains(forbidden),
                "{} takes the loop's state as a parameter ({forbidden})",
                path.display()
            );
        }
    }
}

/// Nothing in the herder blocks on the caller's async runtime: `Handle::current()` panics on a
/// thread that has none, and the herder's callers are plain threads.
#[test]
fn the_herder_never_reaches_for_an_async_runtime() {
    for (path, text) in herder_files() {
        assert!(!code(&text).contains("Handle::current"), "{} reaches for the caller's runtime", path.display());
    }
}

/// The workspace's root folder.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Every file and folder of the workspace that is under version control's eye: build output,
/// toolchains and dependencies left out.
fn workspace_paths(folder: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(folder) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with('.') || ["target", "node_modules", "__pycache__"].contains(&name.as_str()) {
            continue;
        }
        out.push(path.clone());
        if path.is_dir() {
            workspace_paths(&path, out);
        }
    }
}

/// Whether `name` is defined in `text`: as a function, constant, type, trait or module, or as
/// an enum variant or a struct field (a line that starts with it).
fn defines(text: &str, name: &str) -> bool {
    let is_word_end = |rest: &str| !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
    for keyword in ["fn ", "const ", "static ", "struct ", "enum ", "trait ", "type ", "mod "] {
        let needle = format!("{keyword}{name}");
        let mut from = 0;
        while let Some(at) = text[from..].find(&needle) {
            let end = from + at + needle.len();
            if is_word_end(&text[end..]) {
                return true;
            }
            from = end;
        }
    }
    text.lines().any(|line| {
        let line = line
            .trim_start()
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub(super) ")
            .trim_start_matches("pub ");
        line.strip_prefix(name).is_some_and(|rest| rest.starts_with([',', '(', ' ', '{', ':']) || rest.is_empty())
    })
}

/// The bodies of a type's definition and of its `impl` blocks in `text`: from the `{` that opens
/// each to the `}` that closes it.
fn blocks_of<'a>(text: &'a str, owner: &str) -> Vec<&'a str> {
    let mut blocks = Vec::new();
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let start = line_start;
        line_start += line.len();
        let words: Vec<&str> =
            line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect();
        let Some(at) = words.iter().position(|w| *w == owner) else { continue };
        let opens = words[..at].iter().any(|w| ["impl", "struct", "enum", "trait", "for"].contains(w));
        if !opens || words.first().is_some_and(|w| *w == "use") {
            continue;
        }
        let Some(open) = text[start..].find('{').map(|i| start + i) else { continue };
        if let Some(end) = closing_brace(&text[open..]) {
            blocks.push(&text[open..open + end]);
        }
    }
    blocks
}

/// Where the `{` that `code` starts with is closed, braces inside strings, character literals
/// and comments left out.
fn closing_brace(code: &str) -> Option<usize> {
    let bytes = code.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // A string (a raw one ends at its first quote, which is close enough here).
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'\'' if bytes.get(i + 1) == Some(&b'\\') => {
                i += 2;
                while i < bytes.len() && bytes[i] != b'\'' {
                    i += 1;
                }
            }
            b'\'' if bytes.get(i + 2) == Some(&b'\'') => i += 2,
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'{' => depth += 1,
            b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// ARCHITECTURE.md names things a reader greps for: every backticked path must exist, and
/// every backticked `Type::item` (or `module::item`) must name a type or module whose files
/// define the item. A renamed method fails here instead of misleading the next reader.
#[test]
fn every_name_and_path_architecture_md_cites_exists() {
    let root = workspace();
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let mut paths = Vec::new();
    workspace_paths(&root, &mut paths);
    let relative: Vec<String> =
        paths.iter().map(|p| p.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/")).collect();
    let sources: Vec<(String, String)> = relative
        .iter()
        .zip(&paths)
        .filter(|(name, _)| name.ends_with(".rs"))
        .map(|(name, path)| (name.clone(), std::fs::read_to_string(path).unwrap_or_default()))
        .collect();
    let mut dead = Vec::new();
    for quoted in doc.split('`').skip(1).step_by(2) {
        if quoted.contains(char::is_whitespace) || quoted.is_empty() {
            continue;
        }
        // A test that holds an invariant, as `path/to/file.rs::test_name`: the file has it.
        if let Some((file, test)) = quoted.split_once(".rs::") {
            let text = std::fs::read_to_string(root.join(format!("{file}.rs"))).unwrap_or_default();
            if !text.contains(&format!("fn {test}(")) {
                dead.push(format!("the test `{quoted}`"));
            }
            continue;
        }
        // Paths of the system, the user's home, build output, WIT names and globs are not the
        // workspace's.
        let outside = quoted.starts_with(['/', '~']) || quoted.starts_with("target/") || quoted.contains(['*', ':']);
        let is_path = quoted.contains('/') && !outside;
        if is_path {
            let wanted = quoted.trim_end_matches('/');
            let found = relative.iter().any(|p| {
                p == wanted
                    || p.ends_with(&format!("/{wanted}"))
                    || p.ends_with(&format!("/{wanted}.rs"))
                    || *p == format!("{wanted}.rs")
            });
            if !found {
                dead.push(format!("the path `{quoted}`"));
            }
            continue;
        }
        let segments: Vec<&str> = quoted.trim_end_matches("()").split("::").collect();
        let is_name = segments.len() >= 2
            && segments.iter().all(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        if !is_name {
            continue;
        }
        let segments: Vec<&str> =
            segments.into_iter().skip_while(|s| ["crate", "wharf", "wharf_connect", "super"].contains(s)).collect();
        let [.., owner, item] = segments.as_slice() else { continue };
        let found = if owner.chars().next().is_some_and(char::is_uppercase) {
            // A type: its definition or one of its impl blocks has the item.
            let blocks: Vec<&str> = sources.iter().flat_map(|(_, text)| blocks_of(text, owner)).collect();
            if blocks.is_empty() {
                dead.push(format!("`{quoted}` ({owner} is defined nowhere)"));
                continue;
            }
            blocks.iter().any(|block| defines(block, item))
        } else {
            // A module: one of its files defines the item. A module outside the workspace
            // (`serde::Serialize`) is not this document's to keep.
            let files: Vec<&String> = sources
                .iter()
                .filter(|(name, _)| name.ends_with(&format!("/{owner}.rs")) || name.contains(&format!("/{owner}/")))
                .map(|(_, text)| text)
                .collect();
            if files.is_empty() {
                continue;
            }
            files.iter().any(|text| defines(text, item))
        };
        if !found {
            dead.push(format!("`{quoted}` ({item} is not among {owner}'s items)"));
        }
    }
    assert!(dead.is_empty(), "ARCHITECTURE.md cites what does not exist:\n{}", dead.join("\n"));
}

/// A file's code before its tests.
fn code_before_tests(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    code(text.split("#[cfg(test)]\nmod tests {").next().unwrap_or_default())
}

/// The units of one folder (its files, and its subfolders as one unit each) that each unit uses
/// (`super::<unit>`, or the folder's full path), the folder's `mod.rs` aside and tests left out.
fn sibling_edges(folder: &Path, module_path: &str) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(folder)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter_map(|path| {
            let stem = path.file_stem()?.to_string_lossy().to_string();
            if path.extension().is_some_and(|e| e == "rs") {
                return Some((stem, code_before_tests(&path)));
            }
            // A subfolder: its `mod.rs` names the folder's units as `super::`, its other files as
            // `super::super::` (their own `super::` is the subfolder).
            let index = path.join("mod.rs");
            if !index.is_file() {
                return None;
            }
            let mut text = code_before_tests(&index);
            for entry in std::fs::read_dir(&path).unwrap().flatten() {
                let child = entry.path();
                if child != index && child.extension().is_some_and(|e| e == "rs") {
                    let own =
                        code_before_tests(&child).replace("super::super::", "\u{1}").replace("super::", "self_::");
                    text.push_str(&own.replace('\u{1}', "super::"));
                }
            }
            Some((stem, text))
        })
        .filter(|(stem, _)| stem != "mod")
        .collect();
    files.sort();
    let stems: Vec<String> = files.iter().map(|(stem, _)| stem.clone()).collect();
    let mut edges = Vec::new();
    for (stem, text) in &files {
        for other in stems.iter().filter(|other| *other != stem) {
            let named = |prefix: &str| {
                text.match_indices(&format!("{prefix}{other}")).any(|(at, found)| {
                    !text[at + found.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                })
            };
            let grouped = text.contains("super::{") && {
                let group = text.split("super::{").skip(1).map(|g| g.split('}').next().unwrap_or_default());
                group.into_iter().any(|g| g.split(',').any(|entry| entry.trim().split("::").next() == Some(other)))
            };
            if named("super::") || named(&format!("{module_path}::")) || grouped {
                edges.push((stem.clone(), other.clone()));
            }
        }
    }
    edges
}

/// The files of `runtime/` use each other one way: the generated bindings at the bottom, then the
/// batches, the conversions, the sandbox and the instances. A cycle among them is how the
/// generated code once came to call into the instances.
#[test]
fn the_runtimes_files_use_each_other_one_way() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/runtime");
    let edges = sibling_edges(&folder, "crate::runtime");
    assert!(edges.iter().any(|(from, to)| from == "instance" && to == "bindings"), "the scan finds no edge: {edges:?}");
    // Depth-first search for a way back to where it started.
    fn reaches(edges: &[(String, String)], from: &str, to: &str, seen: &mut Vec<String>) -> bool {
        for (_, next) in edges.iter().filter(|(f, _)| f == from) {
            if next == to {
                return true;
            }
            if !seen.contains(next) {
                seen.push(next.clone());
                if reaches(edges, next, to, seen) {
                    return true;
                }
            }
        }
        false
    }
    let files: std::collections::BTreeSet<&String> = edges.iter().map(|(from, _)| from).collect();
    for file in files {
        assert!(
            !reaches(&edges, file, file, &mut Vec::new()),
            "runtime/{file}.rs uses, through others, itself; edges: {edges:?}"
        );
    }
}
