//! `topk spec`, `topk codegen` and `topk kernels`: the spec and kernel tooling from the shell.

mod cli_support;

use cli_support::{topk, topk_env};
use std::path::PathBuf;

#[test]
fn every_listed_preset_prints_canonical_text_that_parses_back_to_itself() {
    let list = topk(&["spec", "--list"]);
    list.assert_success();
    assert!(!topk_dsl::PRESETS.is_empty());
    for p in topk_dsl::PRESETS {
        assert!(
            list.stdout.contains(p.name),
            "{} missing from the list",
            p.name
        );
        let one = topk(&["spec", "--preset", p.name]);
        one.assert_success();
        let mut lines = one.stdout.lines();
        let text = lines.next().unwrap();
        assert_eq!(text, p.spec.to_string());
        assert_eq!(lines.next().unwrap(), p.about);
        let parsed = topk(&["spec", "--parse", text]);
        parsed.assert_success();
        assert_eq!(parsed.stdout.trim(), text);
    }
}

#[test]
fn spec_parse_reports_the_broken_rule() {
    topk(&["spec", "--preset", "nope"]).assert_bad_input(&["unknown preset `nope`"]);
    let bad = topk(&["spec", "--parse", "k=0"]);
    bad.assert_bad_input(&["k"]);
    let bad = topk(&["spec", "--parse", "map=teleport"]);
    bad.assert_bad_input(&["map"]);
    // Exactly one of --list, --preset, --parse.
    assert_eq!(topk(&["spec"]).code, 2);
    assert_eq!(topk(&["spec", "--list", "--parse", "k=8"]).code, 2);
}

#[test]
fn codegen_prints_the_kernel_of_a_supported_preset_and_refuses_an_unsupported_one() {
    let mut printed = 0;
    for p in topk_dsl::PRESETS {
        let run = topk(&["codegen", "--preset", p.name]);
        match topk_codegen::generate(&p.spec) {
            Ok(kernel) => {
                run.assert_success();
                assert_eq!(run.stdout.trim_end(), kernel.source.trim_end());
                assert!(run.stdout.contains(&kernel.entry));
                printed += 1;
            }
            Err(e) => run.assert_bad_input(&[&e.to_string()]),
        }
    }
    assert!(printed > 0, "no preset generates source");
}

#[test]
fn codegen_prints_the_generator_kernel() {
    let run = topk(&["codegen", "--generator"]);
    run.assert_success();
    assert_eq!(
        run.stdout.trim_end(),
        topk_codegen::generator::generator_source().trim_end()
    );
}

fn nvrtc_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".dev/nvrtc/nvidia/cu13/lib");
    dir.is_dir().then_some(dir)
}

/// LD_LIBRARY_PATH with the NVRTC of .dev/nvrtc first, or None (with a note) when it is not
/// installed there.
fn library_path_with_nvrtc() -> Option<String> {
    let Some(dir) = nvrtc_dir() else {
        eprintln!("libnvrtc not installed under .dev/nvrtc: skipping");
        return None;
    };
    Some(match std::env::var("LD_LIBRARY_PATH") {
        Ok(old) if !old.is_empty() => format!("{}:{old}", dir.display()),
        _ => dir.display().to_string(),
    })
}

#[test]
fn kernels_without_check_lists_every_preset() {
    let run = topk(&["kernels"]);
    run.assert_success();
    for p in topk_dsl::PRESETS {
        assert!(
            run.stdout.lines().any(|l| l.starts_with(p.name)),
            "{}",
            p.name
        );
    }
}

#[test]
fn kernels_check_compiles_or_skips_every_preset_with_nvrtc() {
    let Some(path) = library_path_with_nvrtc() else {
        return;
    };
    let run = topk_env(&["kernels", "--check"], &[("LD_LIBRARY_PATH", &path)]);
    run.assert_success();
    let lines: Vec<&str> = run.stdout.lines().filter(|l| !l.starts_with(' ')).collect();
    for p in topk_dsl::PRESETS {
        let line = lines
            .iter()
            .find(|l| l.split(' ').nth(1) == Some(p.name))
            .unwrap_or_else(|| panic!("no line for {}: {}", p.name, run.stdout));
        let kernel = topk_codegen::generate(&p.spec).unwrap();
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(fields[0], "ok", "{line}");
        assert_eq!(fields[2], kernel.entry);
        assert!(fields[3].parse::<f64>().is_ok(), "{line}");
    }
}

#[test]
fn kernels_check_for_sm80_skips_the_cluster_presets_and_compiles_the_rest() {
    let Some(path) = library_path_with_nvrtc() else {
        return;
    };
    let run = topk_env(
        &["kernels", "--check", "--arch", "sm_80"],
        &[("LD_LIBRARY_PATH", &path)],
    );
    run.assert_success();
    for p in topk_dsl::PRESETS {
        let line = run
            .stdout
            .lines()
            .find(|l| l.split(' ').nth(1) == Some(p.name))
            .unwrap_or_else(|| panic!("no line for {}: {}", p.name, run.stdout));
        let family = topk_codegen::generate(&p.spec).unwrap().family;
        let expected = match family {
            topk_codegen::Family::Cluster { .. } => "skip",
            _ => "ok",
        };
        assert_eq!(line.split(' ').next(), Some(expected), "{line}");
    }
}

#[test]
fn kernels_check_without_nvrtc_says_how_to_install_it() {
    let run = topk_env(
        &["kernels", "--check"],
        &[("LD_LIBRARY_PATH", "/nonexistent")],
    );
    if run.code == 0 {
        return; // NVRTC is installed system-wide
    }
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
    assert!(run.stderr.contains("nvrtc"), "{}", run.stderr);
    assert!(run.stderr.contains("LD_LIBRARY_PATH"), "{}", run.stderr);
}

#[test]
fn kernels_check_refuses_a_malformed_architecture() {
    topk(&["kernels", "--check", "--arch", "hopper"]).assert_bad_input(&["hopper", "sm_90a"]);
}

#[test]
fn help_texts_carry_examples() {
    for cmd in [
        "select", "verify", "gen", "demo", "spec", "codegen", "kernels",
    ] {
        let run = topk(&[cmd, "--help"]);
        run.assert_success();
        assert!(
            run.stdout.contains("Examples:"),
            "{cmd} --help has no examples"
        );
        assert!(run.stdout.contains(&format!("topk {cmd}")), "{cmd} --help");
    }
}

#[test]
fn plan_without_a_device_shows_the_default_spec_on_the_h200s_facts() {
    use topk_runtime::policy::{default_spec, DeviceFacts};
    // 1024 rows of 256K: the default pool, its last wave widened over the H200's 264 workers.
    let out = topk(&["plan", "--k", "2048", "--rows", "1024", "--width", "262144"]);
    out.assert_success();
    let default = default_spec(&DeviceFacts::h200(), 2048, 1024, 262_144);
    assert!(out.stdout.contains(&default.to_string()), "{}", out.stdout);
    assert!(out.stdout.contains("tail=2@264"), "{}", out.stdout);
    assert!(
        out.stdout.contains("rule        persistent"),
        "{}",
        out.stdout
    );
    // Rows of 1M already have rho 2; a given spec is planned as given.
    let wide = topk(&[
        "plan", "--k", "2048", "--rows", "1024", "--width", "1048576",
    ]);
    wide.assert_success();
    assert!(!wide.stdout.contains("tail="), "{}", wide.stdout);
    let given = topk(&[
        "plan",
        "--k",
        "2048",
        "--rows",
        "1024",
        "--width",
        "262144",
        "--preset",
        "persistent-s128-rescue",
    ]);
    given.assert_success();
    assert!(!given.stdout.contains("tail="), "{}", given.stdout);
    assert!(given.stdout.contains("(given)"), "{}", given.stdout);
}

#[test]
fn plan_table_prints_the_default_map_over_a_grid() {
    use topk_runtime::policy::{map_table, DeviceFacts, Grid};
    let out = topk(&["plan", "--table", "--device-facts", "h200"]);
    out.assert_success();
    let expected = format!(
        "# device facts: the NVIDIA H200's\n{}",
        map_table(&DeviceFacts::h200(), &Grid::default())
    );
    assert_eq!(out.stdout, expected);
    // A grid of the caller's: one line per shape after the three header lines.
    let some = topk(&[
        "plan",
        "--table",
        "--device-facts",
        "h200",
        "--k",
        "2048",
        "--rows",
        "1,8,1024",
        "--width",
        "262144,1048576",
    ]);
    some.assert_success();
    let lines: Vec<&str> = some.stdout.lines().collect();
    assert_eq!(lines.len(), 3 + 6, "{}", some.stdout);
    assert!(lines[3].contains("cluster16") && lines[3].contains("map=cluster(16)"));
    assert!(lines[8].contains("stagger=16"), "{}", lines[8]);
    // Lists are for --table; a spec has no table.
    let lists = topk(&["plan", "--k", "2048,512", "--rows", "1", "--width", "4096"]);
    assert_eq!(lists.code, 2, "{}", lists.stderr);
    assert!(lists.stderr.contains("--table"), "{}", lists.stderr);
    let given = topk(&["plan", "--table", "--preset", "cluster8"]);
    assert_eq!(given.code, 2, "{}", given.stderr);
}
