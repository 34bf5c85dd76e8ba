//! `wharf plugin new`: writes a plugin project in one of the languages Wharf supports, which
//! builds as it is (`./build.sh`) into a component `wharf plugin inspect` accepts. Each project
//! carries its own copy of the WIT contract and, for Python, JavaScript and C, of the SDK.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    Python,
    Js,
    C,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    Source,
    Sink,
}

impl Kind {
    fn world(self) -> &'static str {
        match self {
            Kind::Source => "source",
            Kind::Sink => "sink",
        }
    }
}

const WIT: &str = include_str!("../../wit/connector.wit");

/// The files of a project: path relative to its folder, contents, executable.
fn files(lang: Lang, kind: Kind, name: &str) -> Vec<(String, String, bool)> {
    let fill = |template: &str| template.replace("{{name}}", name);
    let world = kind.world();
    let mut files = vec![("wit/connector.wit".to_string(), WIT.to_string(), false)];
    let (build, how) = match lang {
        Lang::Rust => {
            files.push(("Cargo.toml".into(), fill(include_str!("scaffold/rust_Cargo.toml")), false));
            let code = match kind {
                Kind::Source => include_str!("scaffold/rust_source.rs"),
                Kind::Sink => include_str!("scaffold/rust_sink.rs"),
            };
            files.push(("src/lib.rs".into(), fill(code), false));
            let artifact = name.replace('-', "_");
            (
                format!(
                    "cargo build --release --target wasm32-wasip2\n\
                     cp \"${{CARGO_TARGET_DIR:-target}}/wasm32-wasip2/release/{artifact}.wasm\" {name}.wasm\n"
                ),
                "Rust with the wasm32-wasip2 target (`rustup target add wasm32-wasip2`)",
            )
        }
        Lang::Python => {
            let code = match kind {
                Kind::Source => include_str!("scaffold/python_source.py"),
                Kind::Sink => include_str!("scaffold/python_sink.py"),
            };
            files.push(("app.py".into(), fill(code), false));
            for (path, text) in [
                ("sdk/wharf_sdk/__init__.py", include_str!("../../plugins/python/sdk/wharf_sdk/__init__.py")),
                ("sdk/wharf_sdk/_convert.py", include_str!("../../plugins/python/sdk/wharf_sdk/_convert.py")),
                ("sdk/wharf_sdk/source.py", include_str!("../../plugins/python/sdk/wharf_sdk/source.py")),
                ("sdk/wharf_sdk/sink.py", include_str!("../../plugins/python/sdk/wharf_sdk/sink.py")),
                ("sdk/wharf_sdk/data.py", include_str!("../../plugins/python/sdk/wharf_sdk/data.py")),
                ("sdk/source_task.py", include_str!("../../plugins/python/sdk/source_task.py")),
                ("sdk/sink_task.py", include_str!("../../plugins/python/sdk/sink_task.py")),
                ("sdk/data_source_task.py", include_str!("../../plugins/python/sdk/data_source_task.py")),
                ("sdk/data_sink_task.py", include_str!("../../plugins/python/sdk/data_sink_task.py")),
            ] {
                files.push((path.into(), text.into(), false));
            }
            // Python plugins take Connect's data model (the data worlds).
            (
                format!("componentize-py -d wit -w data-{world} componentize -p sdk -p . app -o {name}.wasm\n"),
                "componentize-py (`pip install componentize-py==0.17.2`)",
            )
        }
        Lang::Js => {
            let code = match kind {
                Kind::Source => include_str!("scaffold/js_source.js"),
                Kind::Sink => include_str!("scaffold/js_sink.js"),
            };
            files.push(("app.js".into(), fill(code), false));
            files.push(("sdk/wharf-sdk.js".into(), include_str!("../../plugins/js/sdk/wharf-sdk.js").into(), false));
            if kind == Kind::Sink {
                // `reportErrant`, for sinks only: a source's world lacks the import it needs.
                files.push((
                    "sdk/wharf-sink.js".into(),
                    include_str!("../../plugins/js/sdk/wharf-sink.js").into(),
                    false,
                ));
            }
            (
                // JavaScript plugins take Connect's data model (the data worlds).
                format!("componentize-js app.js --wit wit --world-name data-{world} -o {name}.wasm\n"),
                "componentize-js (`npm install @bytecodealliance/componentize-js@0.23.0`, then put node_modules/.bin on PATH)",
            )
        }
        Lang::C => {
            let code = match kind {
                Kind::Source => include_str!("scaffold/c_source.c"),
                Kind::Sink => include_str!("scaffold/c_sink.c"),
            };
            files.push((format!("{}.c", name.replace('-', "_")), fill(code), false));
            files.push(("sdk/wharf.h".into(), include_str!("../../plugins/c/sdk/wharf.h").into(), false));
            files.push(("sdk/wharf.c".into(), include_str!("../../plugins/c/sdk/wharf.c").into(), false));
            // C plugins take Connect's data model (the data worlds).
            let define = if kind == Kind::Source { "WHARF_SOURCE -DWHARF_DATA" } else { "WHARF_SINK -DWHARF_DATA" };
            let generated = format!("data_{world}");
            (
                format!(
                    ": \"${{WASI_ADAPTER:?set WASI_ADAPTER to wasi_snapshot_preview1.reactor.wasm, from the crate wasi-preview1-component-adapter-provider}}\"\n\
                     gen=$(mktemp -d)\n\
                     trap 'rm -rf \"$gen\"' EXIT\n\
                     wit-bindgen c wit --world data-{world} --out-dir \"$gen\" >/dev/null\n\
                     clang --target=wasm32-wasi -mexec-model=reactor -O2 -D{define} -I sdk -I \"$gen\" \\\n  \
                     *.c sdk/wharf.c \"$gen/{generated}.c\" \"$gen/{generated}_component_type.o\" -o \"$gen/module.wasm\"\n\
                     wasm-tools component new \"$gen/module.wasm\" --adapt \"wasi_snapshot_preview1=$WASI_ADAPTER\" -o {name}.wasm\n"
                ),
                "Debian's clang, lld, wasi-libc and libclang-rt-dev-wasm32, plus `cargo install wit-bindgen-cli wasm-tools`",
            )
        }
    };
    files.push((
        "build.sh".into(),
        format!("#!/bin/sh\n# Builds {name}.wasm. Needs {how}.\nset -eu\ncd \"$(dirname \"$0\")\"\n{build}"),
        true,
    ));
    let readme = format!(
        "# {name}\n\nA Wharf {world} plugin. Build it with `./build.sh` (needs {how}), check it with \
         `wharf plugin inspect {name}.wasm`, and drop `{name}.wasm` into a folder on the worker's \
         `plugin.path`; connectors use it with `connector.class={name}`.\n\n`wit/connector.wit` is the \
         contract between plugin and host; the plugin author's guide explains it.\n"
    );
    files.push(("README.md".into(), readme, false));
    files
}

/// Checks a plugin name: what connectors put in `connector.class`.
fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && name.starts_with(|c: char| c.is_ascii_lowercase());
    if !ok {
        bail!(
            "plugin name {name:?} is not usable: use lowercase letters, digits and dashes, starting with \
             a letter (for example my-source); it becomes connector.class"
        );
    }
    Ok(())
}

/// Writes the project into `dir` (default: a new folder named after the plugin).
pub fn create(lang: Lang, kind: Kind, name: &str, dir: Option<&Path>) -> Result<PathBuf> {
    check_name(name)?;
    let dir = dir.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from(name));
    if dir.exists() && std::fs::read_dir(&dir).map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("{} already exists and is not empty; choose another name or --dir", dir.display());
    }
    for (path, text, executable) in files(lang, kind, name) {
        let target = dir.join(&path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&target, text).with_context(|| format!("cannot write {}", target.display()))?;
        if executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_cannot_be_a_connector_class_are_refused() {
        for bad in ["", "My-Source", "1source", "my source", "my_source"] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_name("my-source2").is_ok());
    }

    #[test]
    fn every_template_names_the_plugin_and_builds_the_right_world() {
        for lang in [Lang::Rust, Lang::Python, Lang::Js, Lang::C] {
            for kind in [Kind::Source, Kind::Sink] {
                let files = files(lang, kind, "my-plugin");
                assert!(files.iter().all(|(_, text, _)| !text.contains("{{name}}")), "{lang:?} {kind:?}");
                let build = &files.iter().find(|(p, _, _)| p == "build.sh").unwrap().1;
                assert!(build.contains("my-plugin.wasm") || build.contains("my_plugin.wasm"), "{build}");
                assert!(files.iter().any(|(p, text, _)| p == "wit/connector.wit" && text.contains("world source")));
            }
        }
    }
}
