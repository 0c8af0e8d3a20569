//! The figures of a run, as a table for people and as JSON for tools.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A latency histogram in microseconds (1 µs to 10 min, 3 significant digits).
pub(crate) fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid histogram bounds")
}

/// Percentiles of a latency distribution, in milliseconds.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Latency {
    /// How many values were recorded.
    pub count: u64,
    /// Median.
    pub p50_ms: Option<f64>,
    /// 99th percentile.
    pub p99_ms: Option<f64>,
    /// 99.9th percentile.
    pub p999_ms: Option<f64>,
    /// Largest value.
    pub max_ms: Option<f64>,
}

impl Latency {
    /// The summary of `histogram` (microseconds); percentiles are `None` when it is empty.
    pub(crate) fn of(histogram: &Histogram<u64>) -> Latency {
        if histogram.is_empty() {
            return Latency::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Latency {
            count: histogram.len(),
            p50_ms: Some(ms(histogram.value_at_quantile(0.50))),
            p99_ms: Some(ms(histogram.value_at_quantile(0.99))),
            p999_ms: Some(ms(histogram.value_at_quantile(0.999))),
            max_ms: Some(ms(histogram.max())),
        }
    }
}

/// The machine's load while a figure was taken (`/proc/loadavg`), since others may share it.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Load {
    /// 1-minute load average.
    pub one: f64,
    /// 5-minute load average.
    pub five: f64,
    /// 15-minute load average.
    pub fifteen: f64,
    /// Logical CPUs of the machine.
    pub cpus: usize,
}

impl Load {
    /// The load now (zeros where `/proc/loadavg` cannot be read).
    pub fn now() -> Load {
        let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let mut fields = text.split_whitespace().map(|f| f.parse().unwrap_or(0.0));
        Load {
            one: fields.next().unwrap_or(0.0),
            five: fields.next().unwrap_or(0.0),
            fifteen: fields.next().unwrap_or(0.0),
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
        }
    }
}

impl std::fmt::Display for Load {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.2} {:.2} {:.2} on {} CPUs",
            self.one, self.five, self.fifteen, self.cpus
        )
    }
}

/// Milliseconds or "n/a".
pub(crate) fn ms(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_string(), |v| format!("{v:.2} ms"))
}

/// A latency row: p50 / p99 / p99.9 / max.
pub(crate) fn latency_row(out: &mut String, name: &str, latency: &Latency) {
    let _ = writeln!(
        out,
        "  {name:<34} p50 {:>11}  p99 {:>11}  p99.9 {:>11}  max {:>11}  (n={})",
        ms(latency.p50_ms),
        ms(latency.p99_ms),
        ms(latency.p999_ms),
        ms(latency.max_ms),
        latency.count
    );
}

/// Errors by gRPC code, one line.
pub(crate) fn errors_line(errors: &BTreeMap<String, u64>) -> String {
    if errors.is_empty() {
        return "none".to_string();
    }
    errors
        .iter()
        .map(|(code, n)| format!("{code}={n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Bytes as MiB.
pub(crate) fn mib(bytes: Option<u64>) -> String {
    bytes.map_or_else(
        || "n/a".to_string(),
        |b| format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)),
    )
}

/// Bytes as KiB.
pub(crate) fn kib(bytes: Option<f64>) -> String {
    bytes.map_or_else(|| "n/a".to_string(), |b| format!("{:.1} KiB", b / 1024.0))
}

/// Writes `value` as pretty JSON to `path`.
pub fn write_json<T: Serialize>(
    path: &std::path::Path,
    value: &T,
) -> Result<(), crate::BenchError> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text + "\n")
        .map_err(|e| crate::BenchError::io(format!("writing {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_histogram_has_no_percentiles() {
        let summary = Latency::of(&latency_histogram());
        assert_eq!(summary.count, 0);
        assert_eq!(summary.p99_ms, None);
        assert_eq!(ms(summary.p50_ms), "n/a");
    }

    #[test]
    fn percentiles_are_in_milliseconds() {
        let mut h = latency_histogram();
        for us in 1..=1000u64 {
            h.record(us * 10).unwrap();
        }
        let summary = Latency::of(&h);
        assert_eq!(summary.count, 1000);
        let p50 = summary.p50_ms.unwrap();
        assert!((4.9..=5.1).contains(&p50), "{p50}");
        let max = summary.max_ms.unwrap();
        assert!((9.9..=10.1).contains(&max), "{max}");
    }
}

/// CPU seconds the server and the bench spent between two readings (server, bench) of their
/// processes' accounting, and each per unit of work in microseconds: what `bench play` reports
/// per move and `bench matchmaking` per pair, computed once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CpuSpent {
    pub(crate) server_seconds: Option<f64>,
    pub(crate) server_us_per_unit: Option<f64>,
    pub(crate) bench_seconds: Option<f64>,
    pub(crate) bench_us_per_unit: Option<f64>,
}

impl CpuSpent {
    /// The figures of a window whose ends read `before` and `after` and in which `units` units
    /// of work were done (none per unit when no work was done or a reading is missing).
    pub(crate) fn between(
        before: (Option<f64>, Option<f64>),
        after: (Option<f64>, Option<f64>),
        units: u64,
    ) -> CpuSpent {
        let spent = |a: Option<f64>, b: Option<f64>| Some(b? - a?);
        let per_unit = |seconds: Option<f64>| {
            seconds
                .filter(|_| units > 0)
                .map(|s| s * 1e6 / units as f64)
        };
        let server_seconds = spent(before.0, after.0);
        let bench_seconds = spent(before.1, after.1);
        CpuSpent {
            server_seconds,
            server_us_per_unit: per_unit(server_seconds),
            bench_seconds,
            bench_us_per_unit: per_unit(bench_seconds),
        }
    }
}
