// Package bench holds sandboxd's benchmarks (`make bench`). Each measures
// its baseline in the same run, reports its figures with b.ReportMetric and
// logs them on one line that says whether they meet their target
// (sandboxtest.Report):
//
//   - a trivial tool over HTTP against a direct call of the same tool
//     (target: HTTP p50 ≤ 150 µs);
//   - bash `true` through sandboxd against a bare `sh -c true`, 5 ms apart
//     (≤ 1.5×);
//   - grep through sandboxd against plain rg on a tree of 50,000 files
//     (≤ 1.05×);
//   - glob through sandboxd against `rg --files` (≤ 1.2×);
//   - read at a deep offset of a 1 GiB file (a `sandboxd call` process):
//     time against `wc -l` of the same file (≤ 1.05×), and peak RSS
//     (≤ 12 MiB).
//
// The tree of files is made once under $TMPDIR/agentsfleet-bench and
// reused; the 1 GiB file is written for each run in a temporary directory
// and removed with it; sandboxd is built once a run into a temporary
// directory of the run's own. Under -benchtime 1x each benchmark still
// repeats its measurement inside (p50 of many calls), so the figures mean
// something.
package bench
