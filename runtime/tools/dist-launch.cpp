//===- dist-launch.cpp - Restart a training job on the ranks that remain --===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-launch [-np N] [--max-restarts R] [--timeout S]
//             [--hostfile FILE | --etcd ENDPOINTS [--etcd-prefix P]]
//             [--mpirun PATH] [--mpi-arg ARG]... [--state-dir DIR]
//             -- PROGRAM train ARGS...
//
// A thin supervisor over mpirun for the `train` command of a model compiled
// with `dist-opt --elastic=MIN:MAX` (one data-parallel layout per world
// size; the executable picks its own). Open MPI 4.1 has no ULFM: one lost
// rank ends the job, so recovery is a restart, as torchrun's elastic agent
// does it:
//
// - The job runs under mpirun with DIST_LAUNCH_DIR set. Every rank keeps a
//   record there (runtime/lib/elastic.cpp: pid, last step, a heartbeat
//   refreshed every 200 ms by a thread of its own, and its final state).
// - A rank is lost when it ends without a final state (SIGKILL, a crash, a
//   node gone: mpirun then ends the job) or when its heartbeat is older
//   than --timeout (SIGSTOP, a hung node): dist-launch then kills that rank
//   (SIGKILL when it is on this machine) and mpirun ends the job.
// - Lost ranks are taken as gone: the job restarts on the ranks that
//   remain, from the newest checkpoint of the program's --checkpoint-dir
//   (train --resume; the layout for that world size runs), appending to the
//   program's --log, at most --max-restarts times. A job that fails with
//   no rank lost (bad data, a bad flag) is not restarted.
// - With --hostfile (Open MPI's format, "host slots=N" per line), the file
//   is read again while the job runs: when it offers more slots than the
//   job has, dist-launch asks the ranks (the file DIST_LAUNCH_DIR/replan)
//   to stop at their next snapshot and restarts the job on the larger
//   layout, losing no step. Inside a Slurm allocation mpirun takes the
//   allocation's nodes as usual.
// - With --etcd, the membership is kept in etcd (as Paddle's elastic
//   manager keeps it): each machine puts a key PREFIX<host> with the value
//   "slots=N" (with a lease, so that a dead machine's key expires), and
//   dist-launch reads them with etcdctl (`etcdctl watch` tells it of each
//   change) into the host file it gives mpirun (DIR/hosts), which then
//   works as --hostfile does: a
//   machine that joins grows the job at its next snapshot, and a restart
//   runs on the machines the store lists.
//
// Each restart is one line on stderr: why, the old and new world size, the
// step resumed from and the steps lost (run again).
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;

/// Why a rank that left no record of its end is lost.
constexpr const char *kWithoutAWord = "ended without a word: killed or crashed";

[[noreturn]] void die(const std::string &message) {
  std::fprintf(stderr, "dist-launch: error: %s\n", message.c_str());
  std::exit(1);
}

void note(const std::string &message) {
  std::fprintf(stderr, "dist-launch: %s\n", message.c_str());
  std::fflush(stderr);
}

bool parseInt(const std::string &text, long long low, long long high,
              long long &out) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || errno || v < low || v > high)
    return false;
  out = v;
  return true;
}

int64_t wallMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Options {
  long long np = 0;
  long long maxRestarts = 3;
  double timeout = 10;
  std::string hostfile;
  std::string etcd;
  std::string etcdPrefix = "/dist-launch/hosts/";
  std::string mpirun = "mpirun";
  std::vector<std::string> mpiArgs;
  std::string stateDir;
  std::vector<std::string> program;
};

void usage() {
  std::printf(
      "usage: dist-launch [-np N] [--max-restarts R] [--timeout S]\n"
      "                   [--hostfile FILE] [--mpirun PATH] [--mpi-arg "
      "ARG]...\n"
      "                   [--state-dir DIR] -- PROGRAM train ARGS...\n"
      "Runs PROGRAM (a model compiled with dist-opt --elastic) under mpirun\n"
      "and restarts it from its newest checkpoint on the ranks that remain\n"
      "when a rank dies or hangs.\n"
      "  -np N             ranks to run (default: the slots of --hostfile)\n"
      "  --max-restarts R  restarts after lost ranks before giving up "
      "(default 3)\n"
      "  --timeout S       seconds without a heartbeat before a rank counts "
      "as hung (default 10)\n"
      "  --hostfile FILE   Open MPI host file, passed to mpirun and read "
      "again while\n"
      "                    the job runs: more slots grow the job at its next "
      "snapshot\n"
      "  --etcd ENDPOINTS  read the hosts from etcd instead (keys "
      "PREFIX<host>,\n"
      "                    values \"slots=N\"), on every change, with etcdctl\n"
      "  --etcd-prefix P   the keys' prefix (default /dist-launch/hosts/)\n"
      "  --mpirun PATH     the launcher (default mpirun)\n"
      "  --mpi-arg ARG     one more argument for mpirun (repeatable)\n"
      "  --state-dir DIR   where the ranks keep their records (default: a "
      "new\n"
      "                    directory under $TMPDIR, removed at the end)\n");
}

Options parseOptions(int argc, char **argv) {
  Options o;
  bool npGiven = false;
  int i = 1;
  auto value = [&](const std::string &flag) -> std::string {
    if (i + 1 >= argc)
      die(flag + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    std::string a = argv[i];
    long long n = 0;
    if (a == "--") {
      ++i;
      break;
    } else if (a == "-h" || a == "--help") {
      usage();
      std::exit(0);
    } else if (a == "-np" || a == "-n" || a == "--np") {
      std::string v = value(a);
      if (!parseInt(v, 1, 1 << 20, n))
        die(a + " expects a positive number of ranks, got '" + v + "'");
      o.np = n;
      npGiven = true;
    } else if (a == "--max-restarts") {
      std::string v = value(a);
      if (!parseInt(v, 0, 1 << 20, n))
        die("--max-restarts expects a number >= 0, got '" + v + "'");
      o.maxRestarts = n;
    } else if (a == "--timeout") {
      std::string v = value(a);
      char *end = nullptr;
      double t = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(t > 0) || t > 1e6)
        die("--timeout expects a positive number of seconds, got '" + v + "'");
      o.timeout = t;
    } else if (a == "--hostfile") {
      o.hostfile = value(a);
    } else if (a == "--etcd") {
      o.etcd = value(a);
    } else if (a == "--etcd-prefix") {
      o.etcdPrefix = value(a);
      if (o.etcdPrefix.empty())
        die("--etcd-prefix expects a key prefix, got ''");
    } else if (a == "--mpirun") {
      o.mpirun = value(a);
    } else if (a == "--mpi-arg") {
      o.mpiArgs.push_back(value(a));
    } else if (a == "--state-dir") {
      o.stateDir = value(a);
    } else {
      die("unknown option '" + a + "' (the program comes after --)");
    }
  }
  for (; i < argc; ++i)
    o.program.push_back(argv[i]);
  if (o.program.empty())
    die("no program to run: dist-launch [options] -- PROGRAM train ARGS...");
  if (!o.etcd.empty() && !o.hostfile.empty())
    die("give --hostfile FILE or --etcd ENDPOINTS, not both");
  if (!npGiven && o.hostfile.empty() && o.etcd.empty())
    die("give -np N, --hostfile FILE or --etcd ENDPOINTS");
  return o;
}

/// Slots of an Open MPI host file ("host slots=N", one per line; a host
/// without slots= counts 1); -1 when it cannot be read.
long long hostfileSlots(const std::string &path, std::string &why) {
  std::ifstream in(path);
  if (!in) {
    why = "cannot read " + path + ": " + std::strerror(errno);
    return -1;
  }
  long long slots = 0;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    size_t hash = line.find('#');
    if (hash != std::string::npos)
      line.resize(hash);
    std::istringstream words(line);
    std::string host, word;
    if (!(words >> host))
      continue;
    long long n = 1;
    while (words >> word) {
      if (word.rfind("slots=", 0) == 0 &&
          !parseInt(word.substr(6), 0, 1 << 20, n)) {
        why = path + ":" + std::to_string(number) + ": bad '" + word + "'";
        return -1;
      }
    }
    slots += n;
  }
  return slots;
}

/// Runs `args` (no shell) and collects its standard output in `out`;
/// false with `why` (the last line of its standard error: etcdctl's
/// "Error: context deadline exceeded", say) when it cannot run or exits
/// non-zero. Its warnings never mix into `out`.
bool capture(const std::vector<std::string> &args, std::string &out,
             std::string &why) {
  int outPipe[2], errPipe[2];
  if (::pipe2(outPipe, O_CLOEXEC) != 0) {
    why = std::string("cannot make a pipe: ") + std::strerror(errno);
    return false;
  }
  if (::pipe2(errPipe, O_CLOEXEC) != 0) {
    why = std::string("cannot make a pipe: ") + std::strerror(errno);
    ::close(outPipe[0]);
    ::close(outPipe[1]);
    return false;
  }
  pid_t child = ::fork();
  if (child == 0) {
    ::dup2(outPipe[1], 1);
    ::dup2(errPipe[1], 2);
    std::vector<char *> cargs;
    for (const std::string &a : args)
      cargs.push_back(const_cast<char *>(a.c_str()));
    cargs.push_back(nullptr);
    ::execvp(cargs[0], cargs.data());
    std::fprintf(stderr, "cannot run %s: %s\n", cargs[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(outPipe[1]);
  ::close(errPipe[1]);
  if (child < 0) {
    ::close(outPipe[0]);
    ::close(errPipe[0]);
    why = std::string("cannot fork: ") + std::strerror(errno);
    return false;
  }
  // Both pipes drained as they fill, so that neither blocks the child.
  out.clear();
  std::string err;
  pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
  std::string *into[2] = {&out, &err};
  for (int open = 2; open > 0;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || !fds[k].revents)
        continue;
      char buffer[4096];
      ssize_t n = ::read(fds[k].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        ::close(fds[k].fd);
        fds[k].fd = -1;
        --open;
        continue;
      }
      into[k]->append(buffer, static_cast<size_t>(n));
    }
  }
  for (pollfd &f : fds)
    if (f.fd >= 0)
      ::close(f.fd);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return true;
  std::string last;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty())
      last = line;
  why = last.empty() ? args[0] + " failed" : last;
  return false;
}

/// `etcdctl watch --prefix` on the hosts' keys, run beside the job: what
/// it prints (a change) makes dist-launch read the hosts again at once,
/// with no polling of the store. Ended with the job.
class MembershipWatch {
public:
  explicit MembershipWatch(const Options &o) {
    if (o.etcd.empty())
      return;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      int null = ::open("/dev/null", O_WRONLY);
      if (null >= 0)
        ::dup2(null, 2);
      std::string endpoints = "--endpoints=" + o.etcd;
      const char *args[] = {"etcdctl", endpoints.c_str(), "--dial-timeout=1s",
                            "watch",   "--prefix",        o.etcdPrefix.c_str(),
                            nullptr};
      ::execvp(args[0], const_cast<char *const *>(args));
      ::_exit(127);
    }
    ::close(fds[1]);
    if (pid_ < 0) {
      ::close(fds[0]);
      return;
    }
    fd_ = fds[0];
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  }
  ~MembershipWatch() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0)
      ::close(fd_);
  }
  /// Whether the watch printed anything since the last call.
  bool changed() {
    bool any = false;
    char buffer[4096];
    while (fd_ >= 0) {
      ssize_t n = ::read(fd_, buffer, sizeof buffer);
      if (n > 0) {
        any = true;
        continue;
      }
      if (n == 0) { // the watch ended (the store went away)
        ::close(fd_);
        fd_ = -1;
      }
      break;
    }
    return any;
  }
  /// Whether the watch runs (else the store is read once a second).
  bool watching() const { return fd_ >= 0; }

private:
  pid_t pid_ = -1;
  int fd_ = -1;
};

/// Reads the hosts under o.etcdPrefix from etcd and writes them as an Open
/// MPI host file to o.hostfile (replaced only when they changed, so that
/// its time tells a change); false with `why` when etcd cannot be read.
bool syncMembership(const Options &o, std::string &why) {
  std::string out;
  if (!capture({"etcdctl", "--endpoints=" + o.etcd, "--dial-timeout=1s",
                "--command-timeout=2s", "get", "--prefix", o.etcdPrefix},
               out, why))
    return false;
  // Keys and values alternate, one line each.
  std::map<std::string, std::string> hosts;
  std::istringstream lines(out);
  for (std::string key, value; std::getline(lines, key);) {
    std::getline(lines, value);
    if (key.rfind(o.etcdPrefix, 0) != 0 || key.size() == o.etcdPrefix.size())
      continue;
    hosts[key.substr(o.etcdPrefix.size())] = value;
  }
  std::string text;
  for (auto &[host, value] : hosts)
    text += host + " " + value + "\n";
  if (::access(o.hostfile.c_str(), F_OK) == 0 && readFile(o.hostfile) == text)
    return true;
  std::string temp = o.hostfile + ".new";
  {
    std::ofstream file(temp);
    file << text;
    if (!file.flush()) {
      why = "cannot write " + temp;
      return false;
    }
  }
  if (::rename(temp.c_str(), o.hostfile.c_str()) != 0) {
    why = "cannot write " + o.hostfile + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

/// A flag's value in the program's arguments ("--flag V" or "--flag=V").
std::string programFlag(const std::vector<std::string> &args,
                        const std::string &flag) {
  std::string found;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag && i + 1 < args.size())
      found = args[i + 1];
    else if (args[i].rfind(flag + "=", 0) == 0)
      found = args[i].substr(flag.size() + 1);
  }
  return found;
}

/// The program's arguments without a flag and its value.
std::vector<std::string> withoutFlag(const std::vector<std::string> &args,
                                     const std::string &flag) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag) {
      ++i;
      continue;
    }
    if (args[i].rfind(flag + "=", 0) == 0)
      continue;
    out.push_back(args[i]);
  }
  return out;
}

/// The step of the newest checkpoint in `dir` (its `latest` file), or -1.
long long newestCheckpoint(const std::string &dir, std::string &name) {
  if (dir.empty())
    return -1;
  std::string latest = readFile(dir + "/latest");
  while (!latest.empty() &&
         std::isspace(static_cast<unsigned char>(latest.back())))
    latest.pop_back();
  long long step = 0;
  if (latest.rfind("step-", 0) != 0 ||
      !parseInt(latest.substr(5), 0, INT64_MAX, step))
    return -1;
  struct stat st;
  if (::stat((dir + "/" + latest).c_str(), &st) != 0)
    return -1;
  name = dir + "/" + latest;
  return step;
}

/// The elastic range of the program's manifest (<program>.json), if any.
void manifestRange(const std::string &program, long long &low,
                   long long &high) {
  std::string json = readFile(program + ".json");
  auto number = [&](const char *key, long long &out) {
    size_t at = json.find(std::string("\"") + key + "\":");
    if (at == std::string::npos)
      return;
    out = std::strtoll(json.c_str() + at + std::strlen(key) + 3, nullptr, 10);
  };
  number("min_ranks", low);
  number("max_ranks", high);
}

struct RankRecord {
  bool present = false;
  long long pid = 0, step = 0, beat = 0;
  std::string state, host;
  /// Whether the rank runs on this machine, where its pid means it.
  bool local() const {
    char name[256] = "";
    ::gethostname(name, sizeof name - 1);
    return pid > 0 && host == name;
  }
};

RankRecord readRecord(const std::string &path) {
  RankRecord r;
  std::string line = readFile(path);
  if (line.empty())
    return r;
  std::istringstream words(line);
  std::string w;
  while (words >> w) {
    size_t eq = w.find('=');
    if (eq == std::string::npos)
      continue;
    std::string k = w.substr(0, eq), v = w.substr(eq + 1);
    if (k == "pid")
      r.pid = std::atoll(v.c_str());
    else if (k == "step")
      r.step = std::atoll(v.c_str());
    else if (k == "beat")
      r.beat = std::atoll(v.c_str());
    else if (k == "state")
      r.state = v;
    else if (k == "host")
      r.host = v;
  }
  r.present = !r.state.empty();
  return r;
}

void clearStateDir(const std::string &dir) {
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind("rank-", 0) == 0 || n == "replan")
        ::unlink((dir + "/" + n).c_str());
    }
    ::closedir(d);
  }
}

volatile sig_atomic_t interrupted = 0;
extern "C" void onInterrupt(int sig) { interrupted = sig; }

/// What one run of the job came to.
struct Outcome {
  int exitCode = 0;
  std::map<long long, std::string> lost; // rank -> why
  bool replan = false, allDone = false, anyRecord = false;
  long long lastStep = 0;
  double detectSeconds = 0; // from the first sign of a loss to the job's end
};

Outcome runOnce(const Options &o, long long ranks,
                const std::vector<std::string> &programArgs, bool restarted,
                long long growTo, long long &slotsSeen) {
  clearStateDir(o.stateDir);
  std::vector<std::string> args{o.mpirun};
  if (::geteuid() == 0)
    args.push_back("--allow-run-as-root");
  if (o.hostfile.empty() && !std::getenv("SLURM_JOB_ID"))
    args.push_back("--oversubscribe");
  if (!o.hostfile.empty())
    args.insert(args.end(), {"--hostfile", o.hostfile});
  args.insert(args.end(), o.mpiArgs.begin(), o.mpiArgs.end());
  args.insert(args.end(),
              {"-x", "DIST_LAUNCH_DIR", "-x", "DIST_RT_COMM_TIMEOUT"});
  if (restarted)
    args.insert(args.end(), {"-x", "DIST_LAUNCH_RESTART"});
  args.insert(args.end(), {"-np", std::to_string(ranks)});
  args.insert(args.end(), programArgs.begin(), programArgs.end());

  ::setenv("DIST_LAUNCH_DIR", o.stateDir.c_str(), 1);
  if (restarted)
    ::setenv("DIST_LAUNCH_RESTART", "1", 1);
  pid_t child = ::fork();
  if (child < 0)
    die(std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    ::setpgid(0, 0);
    std::vector<char *> cargs;
    for (std::string &a : args)
      cargs.push_back(&a[0]);
    cargs.push_back(nullptr);
    ::execvp(cargs[0], cargs.data());
    std::fprintf(stderr, "dist-launch: error: cannot run %s: %s\n", cargs[0],
                 std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(child, child);

  Outcome out;
  std::set<long long> hung;
  Clock::time_point endAsked{};
  bool ending = false, replanAsked = false;
  Clock::time_point firstSign{};
  bool signSeen = false;
  int status = 0;
  struct stat hostStat{};
  Clock::time_point lastSync = Clock::now();
  bool storeWarned = false;
  MembershipWatch watch(o);
  if (!o.hostfile.empty())
    ::stat(o.hostfile.c_str(), &hostStat);
  for (;;) {
    pid_t r = ::waitpid(child, &status, WNOHANG);
    if (r == child)
      break;
    if (interrupted && !ending) {
      ::kill(-child, SIGTERM);
      ending = true;
      endAsked = Clock::now();
    }
    int64_t now = wallMillis();
    for (long long k = 0; k < ranks; ++k) {
      RankRecord rec = readRecord(o.stateDir + "/rank-" + std::to_string(k));
      if (!rec.present || rec.state != "running" || hung.count(k))
        continue;
      if (now - rec.beat > static_cast<int64_t>(o.timeout * 1000)) {
        hung.insert(k);
        out.lost[k] = "no heartbeat for " +
                      std::to_string(static_cast<long long>(o.timeout)) +
                      " s: hung or stopped";
        if (!signSeen) {
          signSeen = true;
          // The rank went quiet at its last beat.
          firstSign = Clock::now() - std::chrono::milliseconds(now - rec.beat);
        }
        // On this machine the rank itself is ended; elsewhere mpirun ends
        // the job once dist-launch does.
        if (rec.local() && ::kill(static_cast<pid_t>(rec.pid), 0) == 0) {
          ::kill(static_cast<pid_t>(rec.pid), SIGKILL);
        } else if (!ending) {
          ::kill(-child, SIGTERM);
        }
        if (!ending) {
          ending = true;
          endAsked = Clock::now();
        }
      }
    }
    // A lost rank on this machine shows before mpirun reacts: it is the
    // one lost (see below).
    if (!signSeen)
      for (long long k = 0; k < ranks; ++k) {
        RankRecord rec = readRecord(o.stateDir + "/rank-" + std::to_string(k));
        if (rec.present && rec.state == "running" && rec.local() &&
            ::kill(static_cast<pid_t>(rec.pid), 0) != 0 && errno == ESRCH) {
          signSeen = true;
          firstSign = Clock::now();
          out.lost[k] = kWithoutAWord;
          break;
        }
      }
    // The store's hosts when they change (a machine gone or back), and
    // every 10 s (every second when the watch has ended).
    if (!o.etcd.empty() &&
        (watch.changed() ||
         Clock::now() - lastSync >
             std::chrono::seconds(watch.watching() ? 10 : 1))) {
      lastSync = Clock::now();
      std::string why;
      if (!syncMembership(o, why) && !storeWarned) {
        storeWarned = true;
        note("--etcd " + o.etcd + ": " + why + "; keeping the last hosts");
      }
    }
    // More slots: stop at the next snapshot and grow.
    if (!o.hostfile.empty() && !replanAsked && !ending) {
      struct stat st{};
      if (::stat(o.hostfile.c_str(), &st) == 0 &&
          (st.st_mtim.tv_sec != hostStat.st_mtim.tv_sec ||
           st.st_mtim.tv_nsec != hostStat.st_mtim.tv_nsec ||
           st.st_size != hostStat.st_size)) {
        hostStat = st;
        std::string why;
        long long slots = hostfileSlots(o.hostfile, why);
        if (slots >= 0)
          slotsSeen = slots;
        if (slots > ranks && ranks < growTo) {
          int fd = ::open((o.stateDir + "/replan").c_str(), O_WRONLY | O_CREAT,
                          0644);
          if (fd >= 0)
            ::close(fd);
          replanAsked = true;
          note((o.etcd.empty()
                    ? o.hostfile
                    : "etcd (" + o.etcdPrefix + " at " + o.etcd + ")") +
               " offers " + std::to_string(slots) +
               " slots: the job stops at its next snapshot to grow");
        }
      }
    }
    // mpirun is given time to end the job, then ended itself.
    if (ending && Clock::now() - endAsked > std::chrono::seconds(10))
      ::kill(-child, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  out.exitCode = WIFEXITED(status)     ? WEXITSTATUS(status)
                 : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                       : 1;
  // Whatever mpirun started and left behind goes too.
  ::kill(-child, SIGKILL);

  // Ranks that ended without a word are lost unless the lost ones were
  // seen while the job ran (a dead process, a silent heartbeat): then the
  // others went down with the job as mpirun ended it (survivors can die
  // before their SIGTERM record; counting them shrank the restart by more
  // ranks than were lost and named rank 0 for a killed rank 1). When
  // mpirun ends the job before the 50 ms probe sees anything, every rank
  // without a record still counts, and the lowest is named.
  bool seenLost = !out.lost.empty();
  size_t done = 0, replanned = 0;
  for (long long k = 0; k < ranks; ++k) {
    RankRecord rec = readRecord(o.stateDir + "/rank-" + std::to_string(k));
    if (!rec.present)
      continue;
    out.anyRecord = true;
    out.lastStep = std::max(out.lastStep, rec.step);
    if (rec.state == "done")
      ++done;
    else if (rec.state == "replan")
      ++replanned;
    else if (rec.state == "running" && !seenLost)
      out.lost[k] = kWithoutAWord;
  }
  if (out.anyRecord)
    for (long long k = 0; k < ranks; ++k)
      if (!readRecord(o.stateDir + "/rank-" + std::to_string(k)).present &&
          !out.lost.count(k))
        out.lost[k] = "never started";
  out.allDone = done == static_cast<size_t>(ranks);
  out.replan = replanned == static_cast<size_t>(ranks);
  if (signSeen)
    out.detectSeconds =
        std::chrono::duration<double>(Clock::now() - firstSign).count();
  return out;
}

} // namespace

int main(int argc, char **argv) {
  Options o = parseOptions(argc, argv);
  bool ownState = o.stateDir.empty();
  if (ownState) {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/dist-launch-XXXXXX";
    if (!::mkdtemp(&pattern[0]))
      die("cannot create a state directory: " +
          std::string(std::strerror(errno)));
    o.stateDir = pattern;
  } else if (::mkdir(o.stateDir.c_str(), 0755) != 0 && errno != EEXIST) {
    die("--state-dir: cannot create " + o.stateDir + ": " +
        std::strerror(errno));
  }
  auto cleanUp = [&] {
    if (!o.etcd.empty())
      ::unlink(o.hostfile.c_str());
    if (ownState) {
      clearStateDir(o.stateDir);
      ::rmdir(o.stateDir.c_str());
    }
  };
  auto fail = [&](const std::string &message) {
    cleanUp();
    die(message);
  };
  std::string why;
  long long slots = -1;
  if (!o.etcd.empty()) {
    o.hostfile = o.stateDir + "/hosts";
    if (!syncMembership(o, why))
      fail("--etcd " + o.etcd + ": cannot read the hosts under " +
           o.etcdPrefix + ": " + why);
  }
  std::string what = o.etcd.empty() ? "--hostfile" : "--etcd " + o.etcd;
  if (!o.hostfile.empty()) {
    slots = hostfileSlots(o.hostfile, why);
    if (slots < 0)
      fail(what + ": " + why);
    if (slots == 0)
      fail(what + ": " +
           (o.etcd.empty() ? o.hostfile + " offers no slots"
                           : "no host under " + o.etcdPrefix + " (keys " +
                                 o.etcdPrefix + "<host>, values \"slots=N\")"));
  }
  long long low = 1, high = o.np ? o.np : slots;
  manifestRange(o.program[0], low, high);
  long long wanted = o.np ? o.np : slots;
  // The job never grows past what was asked for, nor past the layouts.
  long long ceiling = std::min(wanted, high);
  long long ranks = std::min(ceiling, slots > 0 ? slots : ceiling);
  if (ranks < low)
    fail(std::to_string(ranks) +
         " ranks are fewer than the smallest layout "
         "of " +
         o.program[0] + " (" + std::to_string(low) + ")");

  // Survivors of a hung rank must not give up on it before dist-launch
  // notices: their collectives wait longer than the heartbeat timeout.
  if (!std::getenv("DIST_RT_COMM_TIMEOUT"))
    ::setenv("DIST_RT_COMM_TIMEOUT",
             std::to_string(static_cast<long long>(o.timeout * 3 + 30)).c_str(),
             1);
  std::signal(SIGINT, onInterrupt);
  std::signal(SIGTERM, onInterrupt);

  std::string checkpointDir = programFlag(o.program, "--checkpoint-dir");
  std::vector<std::string> args = o.program;
  long long restarts = 0;
  bool restarted = false;
  long long capacity = slots > 0 ? slots : wanted;
  int code = 0;
  for (;;) {
    long long slotsSeen = slots;
    Outcome out = runOnce(o, ranks, args, restarted, ceiling, slotsSeen);
    if (interrupted) {
      code = 128 + interrupted;
      note("interrupted: the job was ended");
      break;
    }
    if (out.exitCode == 0 && out.allDone) {
      code = 0;
      break;
    }
    // Every rank finished (its outputs written) before one ended while
    // leaving MPI: nothing is left to run again.
    if (out.allDone) {
      note("every rank finished training; mpirun exited " +
           std::to_string(out.exitCode) + " afterwards: not restarting");
      code = 0;
      break;
    }
    std::string ckName;
    long long ckStep = newestCheckpoint(checkpointDir, ckName);
    long long next = ranks;
    std::string reason;
    if (out.replan) {
      capacity = slotsSeen;
      next = std::min(ceiling, capacity);
      reason = "more slots (" + std::to_string(slotsSeen) + ")";
    } else {
      if (out.lost.empty() || !out.anyRecord) {
        code = out.exitCode ? out.exitCode : 1;
        note(std::string("the job failed (exit ") +
             std::to_string(out.exitCode) + ")" +
             (out.anyRecord ? " and no rank was lost"
                            : " before any rank "
                              "started") +
             ": not restarting");
        break;
      }
      if (restarts >= o.maxRestarts) {
        note("rank " + std::to_string(out.lost.begin()->first) + " lost (" +
             out.lost.begin()->second + "); --max-restarts " +
             std::to_string(o.maxRestarts) + " exhausted: giving up");
        code = 1;
        break;
      }
      ++restarts;
      // Lost ranks' slots are gone until the host file says otherwise.
      capacity = std::max(0LL, ranks - static_cast<long long>(out.lost.size()));
      if (slotsSeen > 0 && slotsSeen != slots)
        capacity = std::min(capacity, slotsSeen);
      next = std::min(ceiling, capacity);
      std::string who;
      for (auto &[k, w] : out.lost)
        who += (who.empty() ? "rank " : ", rank ") + std::to_string(k) +
               " lost (" + w + ")";
      reason = who;
      if (next < low) {
        note(reason + "; " + std::to_string(next) +
             " ranks remain, fewer than the smallest layout (" +
             std::to_string(low) + "): giving up");
        code = 1;
        break;
      }
    }
    slots = slotsSeen;
    args = withoutFlag(o.program, "--resume");
    long long lost = out.lastStep;
    if (ckStep >= 0) {
      args.insert(args.end(), {"--resume", ckName});
      lost = std::max(0LL, out.lastStep - ckStep);
    } else if (!programFlag(o.program, "--resume").empty()) {
      args.insert(args.end(), {"--resume", programFlag(o.program, "--resume")});
    }
    char detect[64] = "";
    if (!out.replan && out.detectSeconds > 0)
      std::snprintf(detect, sizeof detect, ", detected in %.1f s",
                    out.detectSeconds);
    note((out.replan ? std::string("regrow")
                     : "restart " + std::to_string(restarts) + "/" +
                           std::to_string(o.maxRestarts)) +
         ": " + reason + detect + "; " + std::to_string(ranks) + " -> " +
         std::to_string(next) + " ranks; resuming from " +
         (ckStep >= 0 ? "step " + std::to_string(ckStep) + " (" + ckName + ")"
                      : std::string("the start (no checkpoint yet)")) +
         "; " + std::to_string(lost) + " step" + (lost == 1 ? "" : "s") +
         " run again");
    ranks = next;
    restarted = true;
  }
  cleanUp();
  return code;
}
