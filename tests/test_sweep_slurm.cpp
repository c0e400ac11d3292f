// Sweeps on a cluster: the merge that checks, the generated Slurm script (run here under a fake Slurm
// environment; tests/slurm/slurm_check.sh runs it on a real one), --jobs from the CPUs a process may use, a changed
// sweep file refusing --resume, and filesystems without flock.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "sim/sweep/Cpus.hpp"
#include "sim/sweep/SlurmScript.hpp"
#include "tests/FileHelpers.hpp"
#include "tests/Helpers.hpp"
#include "tests/SweepHelpers.hpp"
#include "traces/sweep/SweepFile.hpp"
#include "traces/sweep/SweepMerge.hpp"

using namespace placesim;
using test::lines_of;
using test::read;
using test::sweep;
using test::sweep_cli;
using test::TempDir;
using test::write;

namespace {

// 4 tp x 5 dp = 20 points; tp 8 is filtered (5 points): 15 evaluated, 5 filtered rows.
const char* kSweep =
    R"({"base": {"model": "gpt-1.7b", "training": {"global_batch": 64}, "strategy": {"preset": "megatron-3d"}},
 "axes": {"strategy.tp": [1, 2, 4, 8], "strategy.dp": [1, 2, 4, 8, 16]}, "filters": {"strategy.tp": {"max": 4}}})";

// Runs `command` in a shell; returns its exit code, its stdout and stderr in `output`.
int shell(const std::string& command, std::string* output = nullptr) {
  TempDir dir;
  int status = std::system((command + " > " + dir / "out" + " 2>&1").c_str());
  if (output) *output = read(dir / "out");
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string first_lines(const std::string& text, std::size_t n) {
  std::string out;
  for (const auto& line : lines_of(text)) {
    if (n == 0) break;
    out += line + "\n";
    --n;
  }
  return out;
}

}  // namespace

TEST_CASE("Filtered points are rows, so a complete sweep has a row per point") {
  TempDir dir;
  write(dir / "sweep.json", kSweep);
  REQUIRE(sweep_cli(dir / "sweep.json" + " --out " + dir / "one.jsonl --quiet") == 0);
  auto lines = lines_of(read(dir / "one.jsonl"));
  REQUIRE(lines.size() == 20);
  int filtered = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    Json row = Json::parse(lines[i]);
    CHECK(row["index"] == i);
    CHECK(row["points"] == 20);
    CHECK(row["version"] == PLACESIM_VERSION);
    CHECK(row["sweep"] == sweep(kSweep).hash);
    CHECK_FALSE(row.contains("shard"));  // a whole sweep's rows name no shard
    if (row["status"] == "filtered") {
      ++filtered;
      CHECK(row["point"]["strategy.tp"] == 8);
      CHECK(row["reason"] == "filters.strategy.tp");
      CHECK_FALSE(row.contains("memory.total_bytes"));
    }
  }
  CHECK(filtered == 5);
  // The hash is of the file's bytes: FNV-1a 64 of "a" is af63dc4c8601ec8c (the published test vector).
  CHECK(fnv1a_hex("a") == "af63dc4c8601ec8c");
  CHECK(fnv1a_hex("") == "cbf29ce484222325");
}

TEST_CASE("sweep merge refuses an incomplete shard, naming the missing indices and the shard that owns them") {
  TempDir dir;
  write(dir / "sweep.json", kSweep);
  REQUIRE(sweep_cli(dir / "sweep.json" + " --out " + dir / "one.jsonl --quiet") == 0);
  std::string shards;
  for (int i = 0; i < 3; ++i) {
    std::string out = dir / ("s" + std::to_string(i) + ".jsonl");
    REQUIRE(sweep_cli(dir / "sweep.json" + " --shard " + std::to_string(i) + "/3 --out " + out + " --quiet") == 0);
    shards += " " + out;
  }
  // Shard 1 holds 1, 4, 7, 10, 13, 16, 19: keep its first 3 rows, as a task killed after 3 points leaves it.
  const std::string whole1 = read(dir / "s1.jsonl");
  write(dir / "s1.jsonl", first_lines(whole1, 3));
  std::string output;
  CHECK(sweep_cli("merge " + dir / "merged.jsonl" + shards, &output) == 2);
  CHECK_THAT(output, Catch::Contains("missing 4 of 20 points:"));
  CHECK_THAT(output, Catch::Contains("shard 1/3 (" + dir / "s1.jsonl" +
                                     ": 3 of 7 rows; resume it with --shard 1/3 --resume): 10-19 every 3"));
  CHECK_FALSE(std::filesystem::exists(dir / "merged.jsonl"));  // nothing written
  CHECK(sweep_cli("merge --check" + shards, &output) == 2);
  // A line cut by a kill is named as such.
  write(dir / "s1.jsonl", first_lines(whole1, 3) + "{\"index\":10,\"sw");
  CHECK(sweep_cli("merge --check" + shards, &output) == 2);
  CHECK_THAT(output, Catch::Contains("s1.jsonl:4: a cut last line"));
  // Resuming the shard completes it; the merge then equals the one-machine run byte for byte.
  REQUIRE(sweep_cli(dir / "sweep.json" + " --shard 1/3 --out " + dir / "s1.jsonl --resume --quiet") == 0);
  CHECK(read(dir / "s1.jsonl") == whole1);
  CHECK(sweep_cli("merge --check" + shards) == 0);
  CHECK_FALSE(std::filesystem::exists(dir / "merged.jsonl"));
  REQUIRE(sweep_cli("merge " + dir / "merged.jsonl" + shards + " --sweep " + dir / "sweep.json" + " --csv " +
                    dir / "merged.csv") == 0);
  CHECK(read(dir / "merged.jsonl") == read(dir / "one.jsonl"));
  REQUIRE(sweep_cli(dir / "sweep.json" + " --out " + dir / "one2.jsonl --csv " + dir / "one.csv --quiet --force") == 0);
  CHECK(read(dir / "merged.csv") == read(dir / "one.csv"));
  // Every point exactly once: a file given twice, or two files holding one shard, is refused.
  CHECK(sweep_cli("merge --check" + shards + " " + dir / "s0.jsonl", &output) == 2);
  CHECK_THAT(output, Catch::Contains("s0.jsonl: given twice"));
  write(dir / "s0copy.jsonl", read(dir / "s0.jsonl"));
  CHECK(sweep_cli("merge --check" + shards + " " + dir / "s0copy.jsonl", &output) == 2);
  CHECK_THAT(output, Catch::Contains("7 point(s) appear more than once"));
  CHECK_THAT(output, Catch::Contains("point 0 is in " + dir / "s0.jsonl" + " and again in " + dir / "s0copy.jsonl"));
  // The output named last by mistake would be a shard: refused before anything is read.
  CHECK(sweep_cli("merge" + shards, &output) == 2);
  CHECK_THAT(output, Catch::Contains("is the output but holds rows of shard 0/3"));
}

TEST_CASE("sweep merge refuses rows of another sweep file, another version or another shard count") {
  TempDir dir;
  write(dir / "a.json", kSweep);
  std::string b = kSweep;
  b.replace(b.find("\"global_batch\": 64"), 18, "\"global_batch\": 128");  // same axes, another base
  write(dir / "b.json", b);
  REQUIRE(sweep_cli(dir / "a.json --shard 0/2 --out " + dir / "a0.jsonl --quiet") == 0);
  REQUIRE(sweep_cli(dir / "b.json --shard 1/2 --out " + dir / "b1.jsonl --quiet") == 0);
  std::string output;
  CHECK(sweep_cli("merge --check " + dir / "a0.jsonl " + dir / "b1.jsonl", &output) == 2);
  CHECK_THAT(output, Catch::Contains("b1.jsonl:1: a row of sweep " + sweep(b).hash + ", but " + sweep(kSweep).hash));
  // --sweep names the file the rows must come from.
  REQUIRE(sweep_cli(dir / "a.json --shard 1/2 --out " + dir / "a1.jsonl --quiet") == 0);
  CHECK(sweep_cli("merge --check " + dir / "a0.jsonl " + dir / "a1.jsonl --sweep " + dir / "b.json", &output) == 2);
  CHECK_THAT(output, Catch::Contains("given with --sweep hashes to " + sweep(b).hash));
  // Another placesim version.
  std::string text = read(dir / "a1.jsonl");
  std::string version = std::string("\"version\":\"") + PLACESIM_VERSION + "\"";
  for (std::size_t at = text.find(version); at != std::string::npos; at = text.find(version, at))
    text.replace(at, version.size(), "\"version\":\"0.0.1\"");
  write(dir / "old.jsonl", text);
  CHECK(sweep_cli("merge --check " + dir / "a0.jsonl " + dir / "old.jsonl", &output) == 2);
  CHECK_THAT(output, Catch::Contains(std::string("old.jsonl:1: written by placesim 0.0.1, but ") + PLACESIM_VERSION));
  // Rows checked against another --device-memory have other verdicts: refused, by the merge and by --resume.
  REQUIRE(sweep_cli(dir / "a.json --shard 1/2 --out " + dir / "d1.jsonl --device-memory 16GiB --quiet") == 0);
  CHECK(sweep_cli("merge --check " + dir / "a0.jsonl " + dir / "d1.jsonl", &output) == 2);
  CHECK_THAT(output, Catch::Contains("d1.jsonl:1: --device-memory 17179869184 bytes, but none in"));
  CHECK(sweep_cli(dir / "a.json --shard 1/2 --out " + dir / "d1.jsonl --device-memory 80GiB --resume --quiet",
                  &output) == 2);
  CHECK_THAT(output, Catch::Contains("point 1 was checked against --device-memory 17179869184 bytes, this run "
                                     "85899345920 bytes"));
  // Damaged rows: cut inside (but ending in a newline), a carriage return, an empty line.
  const std::string a1 = read(dir / "a1.jsonl");
  const std::string first = a1.substr(0, a1.find('\n'));
  write(dir / "bad.jsonl", first.substr(0, 150) + "\n" + a1.substr(a1.find('\n') + 1));
  CHECK(sweep_cli("merge --check " + dir / "a0.jsonl " + dir / "bad.jsonl", &output) == 2);
  CHECK_THAT(output, Catch::Contains("bad.jsonl:1: a damaged row (not one complete JSON object with a status)"));
  write(dir / "crlf.jsonl", first + "\r\n" + a1.substr(a1.find('\n') + 1));
  CHECK(sweep_cli("merge --check " + dir / "a0.jsonl " + dir / "crlf.jsonl", &output) == 2);
  CHECK_THAT(output, Catch::Contains("crlf.jsonl:1: a damaged row (not one complete JSON object with a status; it "
                                     "ends in a carriage return)"));
  write(dir / "blank.jsonl", first + "\n\n" + a1.substr(a1.find('\n') + 1));
  CHECK(sweep_cli("merge --check " + dir / "a0.jsonl " + dir / "blank.jsonl", &output) == 2);
  CHECK_THAT(output, Catch::Contains("blank.jsonl:2: an empty line"));
  CHECK_THAT(output, !Catch::Contains("missing"));  // the rows after it were read
  // A row claiming an absurd point count is reported by count, without tracking every point.
  std::string huge = first;
  huge.replace(huge.find("\"points\":20"), 11, "\"points\":3000000000");
  write(dir / "huge.jsonl", huge + "\n");
  CHECK(sweep_cli("merge --check " + dir / "huge.jsonl", &output) == 2);
  CHECK_THAT(output, Catch::Contains("the files hold 1 rows of a 3000000000-point sweep: at least 2999999999 points "
                                     "are missing"));
  // A shard still being written (its sweep holds the lock) is not merged.
  int fd = ::open((dir / "a1.jsonl").c_str(), O_RDWR);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  CHECK(sweep_cli("merge --check " + dir / "a0.jsonl " + dir / "a1.jsonl", &output) == 2);
  CHECK_THAT(output, Catch::Contains("a1.jsonl: a sweep is still writing it"));
  ::close(fd);
  CHECK(sweep_cli("merge --check " + dir / "a0.jsonl " + dir / "a1.jsonl", &output) == 0);
  // The issue's mistake: an array of 8 tasks running shards i/16 covers half the points; the merge says which.
  std::string files;
  for (int i = 0; i < 8; ++i) {
    std::string out = dir / ("h" + std::to_string(i) + ".jsonl");
    REQUIRE(sweep_cli(dir / "a.json --shard " + std::to_string(i) + "/16 --out " + out + " --quiet") == 0);
    files += " " + out;
  }
  CHECK(sweep_cli("merge --check" + files, &output) == 2);
  CHECK_THAT(output, Catch::Contains("missing 8 of 20 points:"));  // 8..15; 16..19 are in shards 0..3
  CHECK_THAT(output, Catch::Contains("shard 8/16 (no file given holds it; resume it with --shard 8/16 --resume): 8"));
  CHECK_THAT(output,
             Catch::Contains("shard 11/16 (no file given holds it; resume it with --shard 11/16 --resume): 11"));
}

TEST_CASE("The generated Slurm script takes the array size once and merges after the array") {
  TempDir dir;
  write(dir / "sweep.json", kSweep);
  REQUIRE(sweep_cli(dir / "sweep.json" + " --out " + dir / "one.jsonl --quiet") == 0);
  std::filesystem::create_directories(dir / "bin");
  std::string output;
  // The folder of the results is created (Slurm would not create the logs' folder).
  REQUIRE(sweep_cli(dir / "sweep.json --out " + dir / "runs/r.jsonl --slurm --array-size 2", &output) == 0);
  CHECK(std::filesystem::exists(dir / "runs/r.sbatch"));
  REQUIRE(sweep_cli(dir / "sweep.json --out " + dir / "results.jsonl --slurm --array-size 4 --cpus-per-task 2",
                    &output) == 0);
  CHECK_THAT(output, Catch::Contains("wrote " + dir / "results.sbatch" + ": 4 array tasks x 2 CPU(s), 20 points"));
  const std::string script = read(dir / "results.sbatch");
  // The array size appears once; the shard count is the array's ($SLURM_ARRAY_TASK_COUNT).
  CHECK(script.find("#SBATCH --array=0-3\n") != std::string::npos);
  CHECK(script.find("0-3") == script.rfind("0-3"));
  CHECK(script.find("/4") == std::string::npos);
  CHECK(script.find("#SBATCH --cpus-per-task=2\n") != std::string::npos);
  CHECK(script.find("--jobs") == script.rfind("--jobs"));  // only in a comment: --jobs comes from the allocation
  // A fake sbatch that records its arguments; the tasks run as Slurm would start them.
  // It saves the merge script from stdin, the SLURM_ variables it was given, and fails when told to.
  write(dir / "bin/sbatch", "#!/bin/bash\nprintf '%s\\n' \"$@\" >> " + dir / "sbatch.args" + "\ncat > " +
                                dir / "merge.sh" + "\nenv | grep ^SLURM_ | sort > " + dir / "sbatch.env" + "\n[ -e " +
                                dir / "sbatch.fail" + " ] && exit 1\necho 99\n");
  REQUIRE(shell("chmod +x " + dir / "bin/sbatch") == 0);
  auto task = [&](int id, int count, int min, int max, std::string* out, int restart = 0) {
    return shell("env PATH=" + dir / "bin" + ":$PATH SLURM_ARRAY_JOB_ID=77 SLURM_JOB_ID=" + std::to_string(80 + id) +
                     " SLURM_RESTART_COUNT=" + std::to_string(restart) + " SLURM_ARRAY_TASK_ID=" + std::to_string(id) +
                     " SLURM_ARRAY_TASK_COUNT=" + std::to_string(count) +
                     " SLURM_ARRAY_TASK_MIN=" + std::to_string(min) + " SLURM_ARRAY_TASK_MAX=" + std::to_string(max) +
                     " SLURM_CPUS_PER_TASK=2 SLURM_JOB_ACCOUNT=lab bash " + dir / "results.sbatch",
                 out);
  };
  // `sbatch --array=0-7:2` (4 tasks, ids 0..6) would skip shards: refused.
  CHECK(task(2, 4, 0, 6, &output) == 2);
  CHECK_THAT(output, Catch::Contains("the array must be 0-(N-1), one task per shard (this one is 0-6 with 4 tasks)"));
  std::filesystem::remove(dir / "sbatch.args");
  std::filesystem::remove(dir / "results.merge-submitted.77.0");
  for (int id : {2, 0, 3, 1}) REQUIRE(task(id, 4, 0, 3, &output) == 0);
  for (int id = 0; id < 4; ++id)
    for (const auto& line : lines_of(read(dir / ("results.shard-" + std::to_string(id) + ".jsonl"))))
      CHECK(Json::parse(line)["shard"] == std::to_string(id) + "/4");
  // One merge submitted, by the first task to start, depending on the whole array.
  auto args = lines_of(read(dir / "sbatch.args"));
  REQUIRE(std::count(args.begin(), args.end(), "--parsable") == 1);
  CHECK(std::count(args.begin(), args.end(), "--dependency=afterany:77") == 1);
  CHECK(read(dir / "results.merge-submitted.77.0") == "82\nmerge job 99\n");  // task 2 ran first
  // The merge job gets the array's account but none of the array's variables.
  CHECK(std::count(args.begin(), args.end(), "--account=lab") == 1);
  const std::string env = read(dir / "sbatch.env");
  CHECK(env.find("SLURM_ARRAY") == std::string::npos);
  CHECK(env.find("SLURM_CPUS_PER_TASK") == std::string::npos);
  // Run the merge script it submitted (on sbatch's stdin).
  const std::string merge = read(dir / "merge.sh");
  CHECK_THAT(merge, Catch::StartsWith("#!/bin/bash\n"));
  CHECK_THAT(merge, Catch::Contains(" sweep merge " + dir / "results.jsonl " + dir / "results.shard-0.jsonl "));
  REQUIRE(shell("bash " + dir / "merge.sh", &output) == 0);
  CHECK(read(dir / "results.jsonl") == read(dir / "one.jsonl"));
  // A task requeued with scontrol (restart 1) submits one more merge, so a requeue after the merge ran is merged.
  REQUIRE(task(1, 4, 0, 3, &output, 1) == 0);
  REQUIRE(task(3, 4, 0, 3, &output, 1) == 0);
  args = lines_of(read(dir / "sbatch.args"));
  CHECK(std::count(args.begin(), args.end(), "--parsable") == 2);
  // A merge that cannot be submitted is reported, frees its marker, and does not stop the shard.
  write(dir / "sbatch.fail", "");
  std::filesystem::remove(dir / "results.shard-2.jsonl");
  REQUIRE(task(2, 4, 0, 3, &output, 2) == 0);
  CHECK_THAT(output, Catch::Contains("could not submit the merge job; when the array has ended, run: "));
  CHECK_FALSE(std::filesystem::exists(dir / "results.merge-submitted.77.2"));
  CHECK(lines_of(read(dir / "results.shard-2.jsonl")).size() == 5);
  // Paths Slurm's #SBATCH parser would split are refused.
  std::filesystem::create_directories(dir / "a b");
  CHECK(sweep_cli(dir / "sweep.json --out '" + dir / "a b/r.jsonl' --slurm", &output) == 2);
  CHECK_THAT(output, Catch::Contains("cannot hold spaces, #, %, quotes or backslashes"));
  // Bad sizes are refused.
  CHECK(sweep_cli(dir / "sweep.json --out " + dir / "r.jsonl --slurm --array-size 21", &output) == 2);
  CHECK_THAT(output, Catch::Contains("--array-size=21 is more than the sweep's 20 points"));
  CHECK(sweep_cli(dir / "sweep.json --out " + dir / "r.jsonl --slurm --cpus-per-task 0", &output) == 2);
  CHECK_THAT(output, Catch::Contains("--cpus-per-task=0 must be an integer from 1 to 4096"));
  CHECK(sweep_cli(dir / "sweep.json --out " + dir / "r.jsonl --array-size 4", &output) == 2);
  CHECK_THAT(output, Catch::Contains("--array-size goes with --slurm"));
}

TEST_CASE("Default jobs: --jobs defaults to the CPUs the process may use, at most SLURM_CPUS_PER_TASK") {
  CHECK(default_jobs(128, "1") == 1);  // a 1-CPU Slurm task on a 128-core node without task affinity
  CHECK(default_jobs(128, "16") == 16);
  CHECK(default_jobs(2, "8") == 2);  // never more than the affinity mask allows
  CHECK(default_jobs(4, nullptr) == 4);
  CHECK(default_jobs(4, "") == 4);
  CHECK(default_jobs(4, "2(x3)") == 4);  // not a plain number: ignored
  CHECK(default_jobs(0, nullptr) == 1);
  cpu_set_t set;
  REQUIRE(::sched_getaffinity(0, sizeof set, &set) == 0);
  CHECK(affinity_cpus() == static_cast<unsigned>(CPU_COUNT(&set)));
  // End to end: the summary names the jobs used.
  TempDir dir;
  write(dir / "sweep.json", kSweep);
  std::string output;
  REQUIRE(shell("env SLURM_CPUS_PER_TASK=1 " PLACESIM_BINARY " sweep " + dir / "sweep.json --out " + dir / "a.jsonl",
                &output) == 0);
  CHECK_THAT(output, Catch::Contains("with 1 job ->"));
  REQUIRE(shell("taskset -c 0 " PLACESIM_BINARY " sweep " + dir / "sweep.json --out " + dir / "b.jsonl", &output) == 0);
  CHECK_THAT(output, Catch::Contains("with 1 job ->"));
}

TEST_CASE("A changed sweep file refuses --resume, whichever field changed") {
  TempDir dir;
  write(dir / "sweep.json", kSweep);
  REQUIRE(sweep_cli(dir / "sweep.json --out " + dir / "r.jsonl --quiet") == 0);
  write(dir / "r.jsonl", first_lines(read(dir / "r.jsonl"), 5));  // as a kill leaves it
  const std::string old_hash = sweep(kSweep).hash;
  std::string edited = kSweep;
  edited.replace(edited.find("\"global_batch\": 64"), 18, "\"global_batch\": 32");  // the base, not the axes
  write(dir / "sweep.json", edited);
  std::string output;
  CHECK(sweep_cli(dir / "sweep.json --out " + dir / "r.jsonl --resume --quiet", &output) == 2);
  CHECK_THAT(output, Catch::Contains("r.jsonl:1: point 0 was written by another sweep file (sweep hash \"" + old_hash +
                                     "\"; this file has \"" + sweep(edited).hash + "\")"));
  // Restored, it resumes; a row of another version is refused.
  write(dir / "sweep.json", kSweep);
  std::string text = read(dir / "r.jsonl");
  std::string version = std::string("\"version\":\"") + PLACESIM_VERSION + "\"";
  write(dir / "v.jsonl", text.replace(text.find(version), version.size(), "\"version\":\"0.0.1\""));
  CHECK(sweep_cli(dir / "sweep.json --out " + dir / "v.jsonl --resume --quiet", &output) == 2);
  CHECK_THAT(output, Catch::Contains("point 0 was written by placesim \"0.0.1\", this is \"" PLACESIM_VERSION "\""));
  // A shard file resumed as another shard.
  REQUIRE(sweep_cli(dir / "sweep.json --shard 0/2 --out " + dir / "s.jsonl --quiet") == 0);
  CHECK(sweep_cli(dir / "sweep.json --shard 0/4 --out " + dir / "s.jsonl --resume --quiet", &output) == 2);
  CHECK_THAT(output, Catch::Contains("point 0 was written by shard \"0/2\", this run is shard \"0/4\""));
  REQUIRE(sweep_cli(dir / "sweep.json --out " + dir / "r.jsonl --resume --quiet") == 0);
  CHECK(lines_of(read(dir / "r.jsonl")).size() == 20);
}

TEST_CASE("A filesystem without flock gets its own message and --no-lock") {
  TempDir dir;
  const std::string path = dir / "r.jsonl";
  static int fake_errno = 0;
  auto previous = set_lock_function_for_tests([](int) {
    errno = fake_errno;
    return -1;
  });
  auto message = [&](int error) {
    fake_errno = error;
    return test::refusal_message([&] { ResultsFile file(path, false, false); });
  };
  CHECK_THAT(message(ENOSYS), Catch::StartsWith("cannot lock '" + path +
                                                "' (flock: Function not implemented): this "
                                                "filesystem has no file locks (Lustre mounted without -o flock"));
  CHECK_THAT(message(ENOSYS), Catch::Contains("or pass --no-lock when nothing else writes this file"));
  CHECK_THAT(message(ENOLCK), Catch::Contains("(flock: No locks available)"));
  CHECK_THAT(message(EWOULDBLOCK), Catch::StartsWith("'" + path + "' is being written by another sweep"));
  {
    ResultsFile unlocked(path, false, false, false);  // --no-lock does not call it
  }
  set_lock_function_for_tests(previous);
  // A real lock held by another process: the sweep says so; --no-lock writes anyway.
  write(dir / "sweep.json", kSweep);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  std::string output;
  CHECK(sweep_cli(dir / "sweep.json --out " + path + " --quiet", &output) == 2);
  CHECK_THAT(output, Catch::Contains("is being written by another sweep (it holds the file's lock)"));
  CHECK(sweep_cli(dir / "sweep.json --out " + path + " --quiet --no-lock") == 0);
  ::close(fd);
  CHECK(lines_of(read(path)).size() == 20);
}

TEST_CASE("index_ranges writes runs with their stride") {
  CHECK(index_ranges({3, 11, 19, 27}) == "3-27 every 8");
  CHECK(index_ranges({1, 2, 3, 7, 9}) == "1-3, 7, 9");
  CHECK(index_ranges({5}) == "5");
  CHECK(index_ranges({1, 3, 10, 20, 30}, 2) == "1, 3, ... (3 more)");
  CHECK(shell_quote("it's") == "'it'\\''s'");
}
