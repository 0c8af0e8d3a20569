//! The operations kit (`deploy/grafana/*.json`, `deploy/prometheus/*.yml`) reads only metrics this
//! crate names: a renamed or removed metric fails here, not in a platform's dashboard.

use std::collections::BTreeSet;
use std::path::Path;

/// Every `hf_...` series name this crate defines (the values of its `pub const ...: &str`).
fn defined() -> BTreeSet<String> {
    let source = include_str!("../src/lib.rs");
    source
        .lines()
        .filter_map(|line| {
            let value = line
                .trim()
                .strip_prefix("pub const ")?
                .split("= \"")
                .nth(1)?;
            let name = value.strip_suffix("\";")?;
            name.starts_with("hf_").then(|| name.to_owned())
        })
        .collect()
}

/// Every `hf_...` name in `text`, with a histogram's `_bucket` / `_count` / `_sum` taken off.
fn used(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (start, _) in text.match_indices("hf_") {
        // A name starts the token (not `xhf_`) and runs over [a-z0-9_].
        if start > 0 && text.as_bytes()[start - 1].is_ascii_alphanumeric() {
            continue;
        }
        let name: String = text[start..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        let base = ["_bucket", "_count", "_sum"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix))
            .unwrap_or(&name);
        names.insert(base.to_owned());
    }
    names
}

fn files(dir: &str, extension: &str) -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(dir);
    let mut found = Vec::new();
    let mut todo = vec![dir];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == extension) {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn the_dashboards_and_alerts_read_only_metrics_that_exist() {
    let defined = defined();
    assert!(
        defined.contains("hf_moves_total"),
        "the crate's names were read: {defined:?}"
    );
    let mut checked = 0;
    for path in files("deploy/grafana", "json")
        .into_iter()
        .chain(files("deploy/prometheus", "yml"))
    {
        let text = std::fs::read_to_string(&path).unwrap();
        for name in used(&text) {
            assert!(
                defined.contains(&name),
                "{} reads {name}, which crates/metrics-names does not define",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(
        checked > 20,
        "only {checked} metric names were found in the kit"
    );
}

#[test]
fn names_are_found_with_histogram_suffixes_taken_off() {
    let text = r#"rate(hf_move_duration_seconds_bucket{le="0.1"}[5m]) / hf_moves_total + xhf_no"#;
    assert_eq!(
        used(text).into_iter().collect::<Vec<_>>(),
        ["hf_move_duration_seconds", "hf_moves_total"]
    );
}
