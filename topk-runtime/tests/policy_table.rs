//! The default map over a grid of shapes (`topk plan --table`), snapshotted on the H200's facts
//! with and without thread-block clusters: any change to a rule shows up here as a diff.

use topk_dsl::Mapping;
use topk_runtime::policy::{self, choose, map_table, DeviceFacts, Grid, Shape, MAP};

fn without_clusters() -> DeviceFacts {
    DeviceFacts {
        cc_major: 8,
        clusters8: 0,
        clusters16: 0,
        ..DeviceFacts::h200()
    }
}

#[test]
fn the_default_map_on_the_h200() {
    insta::assert_snapshot!(
        "default-map-h200",
        map_table(&DeviceFacts::h200(), &Grid::default())
    );
}

#[test]
fn the_default_map_without_clusters() {
    insta::assert_snapshot!(
        "default-map-cc8",
        map_table(&without_clusters(), &Grid::default())
    );
}

#[test]
fn the_table_grid_meets_every_rule_and_knob() {
    let h200 = DeviceFacts::h200();
    let grid = Grid::default();
    let mut rules = Vec::new();
    let (mut threads, mut prefetch, mut stagger, mut tail) = (Vec::new(), 0, 0, 0);
    let mut sampled_clusters = [false; 2];
    for &k in &grid.ks {
        for &m_cap in &grid.rows {
            for &width in &grid.widths {
                let (rule, spec) = choose(&h200, &Shape { k, m_cap, width });
                rules.push(rule.name);
                if spec.mapping == Mapping::Persistent {
                    threads.push(spec.threads);
                }
                prefetch += usize::from(spec.prefetch > 0);
                stagger += usize::from(spec.stagger_us > 0);
                tail += usize::from(spec.tail_rows > 0);
                if let Mapping::Cluster { ctas } = spec.mapping {
                    let sampled = spec.proposal != topk_dsl::Proposal::Exact;
                    sampled_clusters[usize::from(ctas == 16)] |= sampled;
                }
            }
        }
    }
    for rule in &MAP {
        assert!(rules.contains(&rule.name), "no shape takes {}", rule.name);
    }
    for t in [256, 384, 512] {
        assert!(threads.contains(&t), "no {t}-thread pool");
    }
    assert!(prefetch > 0 && stagger > 0 && tail > 0);
    assert_eq!(sampled_clusters, [true, true]);
    // Without clusters the same grid takes no cluster rule.
    let cc8 = without_clusters();
    for &m_cap in &grid.rows {
        for &width in &grid.widths {
            let (rule, _) = choose(
                &cc8,
                &Shape {
                    k: 2048,
                    m_cap,
                    width,
                },
            );
            assert!(!rule.name.starts_with("cluster"), "{m_cap} x {width}");
        }
    }
}

#[test]
fn every_rule_and_knob_points_to_a_measured_section() {
    let results = include_str!("../../bench/RESULTS.md");
    let history = include_str!("../../docs/experiments.md");
    let headings: Vec<&str> = results
        .lines()
        .chain(history.lines())
        .filter(|l| l.starts_with('#'))
        .collect();
    let sections = MAP
        .iter()
        .map(|r| (r.name, r.measured, r.why))
        .chain(policy::KNOBS.iter().map(|k| (k.name, k.measured, k.why)))
        .chain(
            policy::MARGINS
                .iter()
                .map(|m| ("margin", m.measured, m.why)),
        );
    for (name, measured, why) in sections {
        assert!(!why.is_empty(), "{name} says why");
        for section in measured.split("; ") {
            let section = section.split(" (").next().unwrap_or(section);
            assert!(
                headings.iter().any(|h| h.contains(section)),
                "{name}: neither bench/RESULTS.md nor docs/experiments.md has a section `{section}`"
            );
        }
    }
}
