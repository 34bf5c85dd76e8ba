//! `wharf plugin new`: writes a plugin project in one of the languages Wharf supports, a source, a
//! sink or a transform, which builds as it is (`./build.sh`) into a component `wharf plugin
//! inspect` accepts. Each project carries its own copy of the WIT contract and, for Python,
//! JavaScript and C, of the SDK.

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
    Transform,
}

impl Kind {
    fn world(self) -> &'static str {
        match self {
            Kind::Source => "source",
            Kind::Sink => "sink",
            Kind::Transform => "transform",
        }
    }

    /// The world a project in Python, JavaScript or C builds for: the one that carries Connect's
    /// data model (a transform's always does).
    fn data_world(self) -> &'static str {
        match self {
            Kind::Source => "data-source",
            Kind::Sink => "data-sink",
            Kind::Transform => "transform",
        }
    }
}

const WIT: &str = include_str!("../../wit/connector.wit");

/// `scripts/toolchains`, copied into projects in Python, JavaScript and C as `tools/toolchains`:
/// their `build.sh` finds the toolchains Wharf's own build installed on this machine, or installs
/// them the same way, at the same versions.
const TOOLCHAINS: &str = include_str!("../../scripts/toolchains");

/// The lines of a `build.sh` that put the `lang` toolchain on PATH, installing it when missing.
fn toolchain_lines(lang: &str) -> String {
    format!("tools/toolchains install {lang}\nPATH=\"$(tools/toolchains path):$PATH\"\n")
}

/// The files of a project: path relative to its folder, contents, executable.
fn files(lang: Lang, kind: Kind, name: &str) -> Vec<(String, String, bool)> {
    let fill = |template: &str| template.replace("{{name}}", name);
    let world = kind.world();
    let data_world = kind.data_world();
    let mut files = vec![("wit/connector.wit".to_string(), WIT.to_string(), false)];
    let (build, how) = match lang {
        Lang::Rust => {
            files.push(("Cargo.toml".into(), fill(include_str!("scaffold/rust_Cargo.toml")), false));
            let code = match kind {
                Kind::Source => include_str!("scaffold/rust_source.rs"),
                Kind::Sink => include_str!("scaffold/rust_sink.rs"),
                Kind::Transform => include_str!("scaffold/rust_transform.rs"),
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
                Kind::Transform => include_str!("scaffold/python_transform.py"),
            };
            files.push(("app.py".into(), fill(code), false));
            for (path, text) in [
                ("sdk/wharf_sdk/__init__.py", include_str!("../../plugins/python/sdk/wharf_sdk/__init__.py")),
                ("sdk/wharf_sdk/_convert.py", include_str!("../../plugins/python/sdk/wharf_sdk/_convert.py")),
                ("sdk/wharf_sdk/source.py", include_str!("../../plugins/python/sdk/wharf_sdk/source.py")),
                ("sdk/wharf_sdk/sink.py", include_str!("../../plugins/python/sdk/wharf_sdk/sink.py")),
                ("sdk/wharf_sdk/transform.py", include_str!("../../plugins/python/sdk/wharf_sdk/transform.py")),
                ("sdk/wharf_sdk/data.py", include_str!("../../plugins/python/sdk/wharf_sdk/data.py")),
                // For a source moved to an exactly-once world (docs/plugins/python.md).
                ("sdk/wharf_sdk/transactions.py", include_str!("../../plugins/python/sdk/wharf_sdk/transactions.py")),
                ("sdk/source_task.py", include_str!("../../plugins/python/sdk/source_task.py")),
                ("sdk/sink_task.py", include_str!("../../plugins/python/sdk/sink_task.py")),
                ("sdk/data_source_task.py", include_str!("../../plugins/python/sdk/data_source_task.py")),
                ("sdk/data_sink_task.py", include_str!("../../plugins/python/sdk/data_sink_task.py")),
                ("sdk/transformer.py", include_str!("../../plugins/python/sdk/transformer.py")),
            ] {
                files.push((path.into(), text.into(), false));
            }
            // Python plugins take Connect's data model (the data worlds; a transform's has it).
            files.push(("tools/toolchains".into(), TOOLCHAINS.into(), true));
            (
                format!(
                    "{}componentize-py -d wit -w {data_world} componentize -p sdk -p . app -o {name}.wasm\n",
                    toolchain_lines("python")
                ),
                "Python 3 with venv; tools/toolchains installs componentize-py from PyPI the first time, into \
                 ~/.cache/wharf/toolchains, unless Wharf's build put it there already",
            )
        }
        Lang::Js => {
            let code = match kind {
                Kind::Source => include_str!("scaffold/js_source.js"),
                Kind::Sink => include_str!("scaffold/js_sink.js"),
                Kind::Transform => include_str!("scaffold/js_transform.js"),
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
            if kind == Kind::Source {
                // The transaction calls, for a source moved to an exactly-once world (a plain
                // source's world lacks the import they need; docs/plugins/javascript.md).
                files.push((
                    "sdk/wharf-transactions.js".into(),
                    include_str!("../../plugins/js/sdk/wharf-transactions.js").into(),
                    false,
                ));
            }
            files.push(("tools/toolchains".into(), TOOLCHAINS.into(), true));
            (
                // JavaScript plugins take Connect's data model (the data worlds; a transform's has it).
                format!(
                    "{}componentize-js app.js --wit wit --world-name {data_world} -o {name}.wasm\n",
                    toolchain_lines("js")
                ),
                "Node.js and npm; tools/toolchains installs componentize-js from npm the first time, into \
                 ~/.cache/wharf/toolchains, unless Wharf's build put it there already",
            )
        }
        Lang::C => {
            let code = match kind {
                Kind::Source => include_str!("scaffold/c_source.c"),
                Kind::Sink => include_str!("scaffold/c_sink.c"),
                Kind::Transform => include_str!("scaffold/c_transform.c"),
            };
            files.push((format!("{}.c", name.replace('-', "_")), fill(code), false));
            files.push(("sdk/wharf.h".into(), include_str!("../../plugins/c/sdk/wharf.h").into(), false));
            files.push(("sdk/wharf.c".into(), include_str!("../../plugins/c/sdk/wharf.c").into(), false));
            // C plugins take Connect's data model (the data worlds; a transform's has it).
            let define = match kind {
                Kind::Source => "WHARF_SOURCE -DWHARF_DATA",
                Kind::Sink => "WHARF_SINK -DWHARF_DATA",
                Kind::Transform => "WHARF_TRANSFORM",
            };
            let generated = data_world.replace('-', "_");
            files.push(("tools/toolchains".into(), TOOLCHAINS.into(), true));
            (
                format!(
                    "{}WASI_ADAPTER=\"${{WASI_ADAPTER:-$(tools/toolchains adapter)}}\"\n\
                     gen=$(mktemp -d)\n\
                     trap 'rm -rf \"$gen\"' EXIT\n\
                     wit-bindgen c wit --world {data_world} --out-dir \"$gen\" >/dev/null\n\
                     clang --target=wasm32-wasi -mexec-model=reactor -O2 -D{define} -I sdk -I \"$gen\" \\\n  \
                     *.c sdk/wharf.c \"$gen/{generated}.c\" \"$gen/{generated}_component_type.o\" -o \"$gen/module.wasm\"\n\
                     wasm-tools component new \"$gen/module.wasm\" --adapt \"wasi_snapshot_preview1=$WASI_ADAPTER\" -o {name}.wasm\n",
                    toolchain_lines("c")
                ),
                "Debian's clang, lld, wasi-libc and libclang-rt-dev-wasm32, and cargo; tools/toolchains builds \
                 wit-bindgen and wasm-tools from crates.io the first time (about two minutes), into \
                 ~/.cache/wharf/toolchains, unless Wharf's build put them there already",
            )
        }
    };
    files.push((
        "build.sh".into(),
        format!("#!/bin/sh\n# Builds {name}.wasm. Needs {how}.\nset -eu\ncd \"$(dirname \"$0\")\"\n{build}"),
        true,
    ));
    let used = match kind {
        Kind::Source | Kind::Sink => format!("`connector.class={name}`"),
        Kind::Transform => {
            format!("`transforms=t` and `transforms.t.type={name}` (its settings under `transforms.t.`)")
        }
    };
    let try_it = match kind {
        Kind::Source => format!(
            "add a connector of it, writing to a topic of its own, and a file sink that writes that \
             topic's records to a file:\n\n```sh\n\
             curl -s -X PUT -H 'content-type: application/json' localhost:8083/connectors/{name}/config \\\n  \
             -d '{{\"connector.class\": \"{name}\", \"topic\": \"{name}-out\"}}'\n\
             curl -s -X PUT -H 'content-type: application/json' localhost:8083/connectors/{name}-see/config \\\n  \
             -d '{{\"connector.class\": \"file-sink\", \"topics\": \"{name}-out\", \"file\": \"/tmp/wharf-dev-{name}/out/{name}.txt\", \"wasm.fs.write\": \"/tmp/wharf-dev-{name}/out\"}}'\n\
             tail -f /tmp/wharf-dev-{name}/out/{name}.txt\n```\n"
        ),
        Kind::Sink => format!(
            "add a connector of it reading the topic the demo's datagen writes:\n\n```sh\n\
             curl -s -X PUT -H 'content-type: application/json' localhost:8083/connectors/{name}/config \\\n  \
             -d '{{\"connector.class\": \"{name}\", \"topics\": \"wharf-dev-datagen\"}}'\n\
             curl -s localhost:8083/connectors/{name}/status\n```\n\n\
             What the plugin logs (`wharf_sdk.log`, `log`, `wharf_log`) shows in the worker's output.\n"
        ),
        Kind::Transform => format!(
            "add a file sink whose chain uses it, reading the topic the demo's datagen writes:\n\n```sh\n\
             curl -s -X PUT -H 'content-type: application/json' localhost:8083/connectors/{name}-see/config \\\n  \
             -d '{{\"connector.class\": \"file-sink\", \"topics\": \"wharf-dev-datagen\", \"transforms\": \"t\", \"transforms.t.type\": \"{name}\", \"file\": \"/tmp/wharf-dev-{name}/out/{name}.txt\", \"wasm.fs.write\": \"/tmp/wharf-dev-{name}/out\"}}'\n\
             tail -f /tmp/wharf-dev-{name}/out/{name}.txt\n```\n"
        ),
    };
    let readme = format!(
        "# {name}\n\nA Wharf {world} plugin. Build it with `./build.sh` (needs {how}), check it with \
         `wharf plugin inspect {name}.wasm`, and drop `{name}.wasm` into a folder on the worker's \
         `plugin.path`; connectors use it with {used}.\n\n`wit/connector.wit` is the contract between \
         plugin and host; the plugin author's guide explains it.\n\n\
         ## Try it without Kafka\n\n\
         `wharf dev` runs a worker on an in-memory stand-in for Kafka, with the plugins Wharf ships \
         (datagen writing the topic `wharf-dev-datagen`, and a file sink). From this folder, with \
         `WHARF` the Wharf checkout whose `./run plugins` built them (and `wharf` its \
         `target/debug/wharf`):\n\n```sh\n\
         ./build.sh\n\
         wharf dev --plugin-path \"$WHARF/target/plugins\" --plugin-path . --dir /tmp/wharf-dev-{name}\n```\n\n\
         (the demo's folder lies outside this one: no connector may be granted a folder of the \
         worker's `plugin.path`). Then, in a second terminal: {try_it}"
    );
    files.push(("README.md".into(), readme, false));
    files
}

/// Checks a plugin name: what connectors put in `connector.class` (a transform's in
/// `transforms.<alias>.type`).
fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && name.starts_with(|c: char| c.is_ascii_lowercase());
    if !ok {
        bail!(
            "plugin name {name:?} is not usable: use lowercase letters, digits and dashes, starting with \
             a letter (for example my-source); it becomes connector.class (a transform's transforms.<alias>.type)"
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
            for kind in [Kind::Source, Kind::Sink, Kind::Transform] {
                let files = files(lang, kind, "my-plugin");
                assert!(files.iter().all(|(_, text, _)| !text.contains("{{name}}")), "{lang:?} {kind:?}");
                let build = &files.iter().find(|(p, _, _)| p == "build.sh").unwrap().1;
                assert!(build.contains("my-plugin.wasm") || build.contains("my_plugin.wasm"), "{build}");
                assert!(files.iter().any(|(p, text, _)| p == "wit/connector.wit" && text.contains("world source")));
            }
        }
    }

    /// The text of a project's file.
    fn file<'a>(files: &'a [(String, String, bool)], path: &str) -> &'a str {
        &files.iter().find(|(p, _, _)| p == path).unwrap_or_else(|| panic!("no {path}")).1
    }

    #[test]
    fn transform_templates_build_the_transform_world_with_the_sdk_call_for_it() {
        let rust = files(Lang::Rust, Kind::Transform, "my-transform");
        assert!(file(&rust, "src/lib.rs").contains(r#"world: "transform""#));
        assert!(file(&rust, "src/lib.rs").contains("impl GuestTransform for"));
        assert!(file(&rust, "build.sh").contains("my_transform.wasm"));

        let python = files(Lang::Python, Kind::Transform, "my-transform");
        assert!(file(&python, "build.sh").contains("-w transform componentize"), "{}", file(&python, "build.sh"));
        assert!(file(&python, "app.py").contains("Transformer = export(Plugin)"));
        assert!(file(&python, "sdk/wharf_sdk/transform.py").contains("class Transform"));
        assert!(file(&python, "sdk/transformer.py").contains("wharf_sdk.transform"));

        let js = files(Lang::Js, Kind::Transform, "my-transform");
        assert!(file(&js, "build.sh").contains("--world-name transform -o"), "{}", file(&js, "build.sh"));
        assert!(file(&js, "app.js").contains("export const { transformer } = defineTransform("));
        assert!(file(&js, "sdk/wharf-sdk.js").contains("export function defineTransform"));
        assert!(js.iter().all(|(p, _, _)| p != "sdk/wharf-sink.js"), "a transform's world lacks errant-records");

        let c = files(Lang::C, Kind::Transform, "my-transform");
        let build = file(&c, "build.sh");
        assert!(build.contains("--world transform --out-dir"), "{build}");
        assert!(build.contains("-DWHARF_TRANSFORM -I sdk"), "{build}");
        assert!(build.contains("\"$gen/transform.c\" \"$gen/transform_component_type.o\""), "{build}");
        assert!(file(&c, "my_transform.c").contains("int wharf_transform_apply("));
        assert!(file(&c, "sdk/wharf.h").contains("int wharf_transform_apply("));

        for lang in [Lang::Rust, Lang::Python, Lang::Js, Lang::C] {
            let readme = file(&files(lang, Kind::Transform, "my-transform"), "README.md").to_string();
            assert!(readme.contains("transforms.t.type=my-transform"), "{lang:?}: {readme}");
            assert!(readme.contains(r#""transforms.t.type": "my-transform""#), "{lang:?}: {readme}");
            assert!(!readme.contains(r#""connector.class": "my-transform""#), "{lang:?}: {readme}");
        }
    }

    #[test]
    fn projects_find_or_install_the_toolchains_wharf_installs() {
        for (lang, toolchain) in [(Lang::Python, "python"), (Lang::Js, "js"), (Lang::C, "c")] {
            let files = files(lang, Kind::Source, "my-source");
            let tools = files.iter().find(|(p, _, _)| p == "tools/toolchains").expect("tools/toolchains");
            assert!(tools.2, "tools/toolchains is executable");
            assert_eq!(tools.1, TOOLCHAINS);
            let build = file(&files, "build.sh");
            assert!(build.contains(&format!("tools/toolchains install {toolchain}\n")), "{build}");
            assert!(build.contains("PATH=\"$(tools/toolchains path):$PATH\""), "{build}");
            let readme = file(&files, "README.md");
            assert!(readme.contains("wharf dev --plugin-path"), "{readme}");
        }
        assert!(files(Lang::Rust, Kind::Source, "my-source").iter().all(|(p, _, _)| p != "tools/toolchains"));
    }

    #[test]
    fn source_and_sink_templates_build_their_data_worlds() {
        for (kind, world) in [(Kind::Source, "data-source"), (Kind::Sink, "data-sink")] {
            for lang in [Lang::Python, Lang::Js, Lang::C] {
                let files = files(lang, kind, "my-plugin");
                let build = file(&files, "build.sh");
                assert!(build.contains(&format!(" {world} ")), "{lang:?} {kind:?}: {build}");
                assert!(file(&files, "README.md").contains("connector.class=my-plugin"));
            }
        }
    }
}
