// campaign's HCCL collective helper: one process, one thread per rank, the case's op
// (--op: HcclAllReduce by default, HcclAllGather, HcclReduceScatter, HcclBroadcast, HcclReduce,
// HcclAlltoAll) timed per rank per round, golden-checked with campaign's golden of that op
// (src/model/case/golden.rs; --count is the op's whole buffer per rank, the chunked ops move
// count / P per block), printing the HCCL_* lines campaign's `hccl` parser reads (their names
// are the seed's, `HCCL_ALLREDUCE_OK` for every op):
//
//   HCCL_COMM_SETUP_OK world_size=2 setup_s=1.281130
//   HCCL_WARMUP round=1 per_rank=[0.032622000, 0.032635000]
//   HCCL_TIMED round=1 per_rank=[0.000165000, 0.000161000]
//   HCCL_ALLREDUCE_OK setup_s=1.281130
//   HCCL_ALLREDUCE_FAIL <reason>            (instead of _OK; exit status 1)
//
// What it fixes in the old harness's helper:
// - After ASCEND_RT_VISIBLE_DEVICES renumbers the devices, rank r uses logical device r
//   (0..P-1), not the physical id given in --devices.
// - HCCL is given the rank (0..P-1), never the device id.
// - fp32, fp16, bf16 and int32 (fp16/bf16 converted on the host, round to nearest even).
// - One line per round, printed (and flushed) as the round ends, not all at the end.
// - Every host barrier has a deadline: when a rank fails or hangs, the others stop waiting,
//   the helper prints HCCL_ALLREDUCE_FAIL naming the rank and exits 1 instead of hanging.
//
//
// Across nodes (--root-info-file PATH): one process per rank, started by srun (or any launcher
// that sets SLURM_PROCID/SLURM_LOCALID, OMPI_COMM_WORLD_RANK/_LOCAL_RANK or PMI_RANK), no MPI.
// Rank 0 calls HcclGetRootInfo and writes the root info to PATH (a file in the run's shared
// bundle dir) atomically; the other ranks wait for it (--barrier-timeout-s) and every rank
// calls HcclCommInitRootInfo with its global rank on its node-local device (the local rank:
// logical id after ASCEND_RT_VISIBLE_DEVICES). Each round's per-rank times and golden verdicts
// are gathered to rank 0 with an HcclAllGather outside the timed region; rank 0 prints the
// lines above, any rank prints HCCL_ALLREDUCE_FAIL for its own failure.
//
// Or from a rank table (--rank-table FILE, the JSON of HCCL's rank-table format the Slurm job
// writes from its allocation and each node's /etc/hccn.conf): every rank calls
// HcclCommInitClusterInfo(FILE, rank, &comm), no root info is handed over. Given both files
// (the shipped definition on several nodes), HCCL_INIT picks: `root_info` (the default) or
// `rank_table`. A rank table the job could not make leaves its reason in FILE.error, which the
// helper reports.
//
// Build: see build.sh (g++ -std=c++17 -O2 -pthread … -lhccl -lascendcl).

#include <acl/acl.h>
#include <hccl/hccl.h>

#include <algorithm>
#include <cerrno>
#include <initializer_list>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---------------------------------------------------------------- options

struct Options {
    uint64_t count = 0;
    std::string dtype = "fp32";
    std::vector<int> devices;
    int warmup = 3;
    int timed = 20;
    std::string input_formula = "rank_linear_v1";
    double barrier_timeout_s = 120.0;
    // HCCL_ALGO to set for this process (empty: leave HCCL's own choice).
    std::string algo;
    std::string op = "allreduce";
    int root = 0;
    // Across nodes: one process per rank, the root info handed over through this file.
    std::string root_info_file;
    // Or from HCCL's rank table in this file (HcclCommInitClusterInfo).
    std::string rank_table;
    int rank = -1;          // --rank, else from the launcher's environment
    int local_device = -1;  // --local-device, else the launcher's local rank
};

bool chunked(const std::string& op) {
    return op == "allgather" || op == "reduce_scatter" || op == "alltoall";
}


[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr,
                 "hccl_allreduce: %s\n"
                 "usage: hccl_allreduce --count N [--dtype fp32|fp16|bf16|int32] --devices 0,1[,…]\n"
                 "       [--warmup-rounds W] [--timed-rounds T] [--input-formula rank_linear_v1|rank_mod16_v1]\n"
                 "       [--barrier-timeout-s S] [--op allreduce|allgather|reduce_scatter|broadcast|reduce|alltoall]\n"
                 "       [--root R] [--root-info-file PATH | --rank-table FILE [--rank R] [--local-device L]]\n",
                 why.c_str());
    std::exit(2);
}

std::vector<int> parse_devices(const std::string& text) {
    std::vector<int> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (item.empty()) usage("empty device id in --devices " + text);
        char* end = nullptr;
        long v = std::strtol(item.c_str(), &end, 10);
        if (*end != '\0' || v < 0) usage("bad device id `" + item + "` in --devices");
        out.push_back(static_cast<int>(v));
    }
    return out;
}

Options parse_args(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(a + " needs a value");
            return argv[++i];
        };
        if (a == "--count") o.count = std::strtoull(value().c_str(), nullptr, 10);
        else if (a == "--dtype") o.dtype = value();
        else if (a == "--devices") o.devices = parse_devices(value());
        else if (a == "--warmup-rounds") o.warmup = std::atoi(value().c_str());
        else if (a == "--timed-rounds") o.timed = std::atoi(value().c_str());
        else if (a == "--input-formula") o.input_formula = value();
        else if (a == "--barrier-timeout-s") o.barrier_timeout_s = std::atof(value().c_str());
        else if (a == "--algo") o.algo = value();
        else if (a == "--op") o.op = value();
        else if (a == "--root") o.root = std::atoi(value().c_str());
        else if (a == "--root-info-file") o.root_info_file = value();
        else if (a == "--rank-table") o.rank_table = value();
        else if (a == "--rank") o.rank = std::atoi(value().c_str());
        else if (a == "--local-device") o.local_device = std::atoi(value().c_str());
        else usage("unknown argument " + a);
    }
    if (o.count == 0) usage("--count must be > 0");
    if (o.devices.size() < 2) usage("--devices needs at least 2 ids");
    if (o.warmup < 0 || o.timed < 1) usage("need --warmup-rounds >= 0 and --timed-rounds >= 1");
    if (o.dtype != "fp32" && o.dtype != "fp16" && o.dtype != "bf16" && o.dtype != "int32")
        usage("unknown --dtype " + o.dtype);
    if (o.input_formula != "rank_linear_v1" && o.input_formula != "rank_mod16_v1")
        usage("unknown --input-formula " + o.input_formula);
    if (!(o.barrier_timeout_s > 0)) usage("--barrier-timeout-s must be > 0");
    if (o.op != "allreduce" && o.op != "allgather" && o.op != "reduce_scatter" &&
        o.op != "broadcast" && o.op != "reduce" && o.op != "alltoall")
        usage("unknown --op " + o.op);
    if (o.root < 0 || o.root >= static_cast<int>(o.devices.size()))
        usage("--root must be a rank 0..P-1");
    if (chunked(o.op) && o.count % o.devices.size() != 0)
        usage("--op " + o.op + " needs --count divisible by P");
    // Both ways given: HCCL_INIT chooses one (HCCL cannot mix them).
    if (!o.root_info_file.empty() && !o.rank_table.empty()) {
        const char* init = std::getenv("HCCL_INIT");
        const std::string how = init && *init ? init : "root_info";
        if (how == "root_info") o.rank_table.clear();
        else if (how == "rank_table") o.root_info_file.clear();
        else usage("HCCL_INIT=" + how + ": expected root_info or rank_table");
    }
    return o;
}

// ---------------------------------------------------------------- dtypes

uint16_t float_to_half(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = static_cast<int32_t>((x >> 23) & 0xffu) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if (((x >> 23) & 0xffu) == 0xffu) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10) return static_cast<uint16_t>(sign);
        mant |= 0x800000u;
        uint32_t shift = static_cast<uint32_t>(14 - exp);
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) ++half;
        return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exponent: correct
    return static_cast<uint16_t>(half);
}

float half_to_float(uint16_t h) {
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {
            int e = -1;
            do { ++e; mant <<= 1; } while (!(mant & 0x400u));
            x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (mant << 13);
    } else {
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

uint16_t float_to_bf16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
}

float bf16_to_float(uint16_t b) {
    uint32_t x = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

struct Dtype {
    HcclDataType hccl;
    size_t bytes;
    double atol, rtol;  // same tolerances as campaign's golden.rs
};

Dtype dtype_of(const std::string& name) {
    if (name == "fp16") return {HCCL_DATA_TYPE_FP16, 2, 2e-2, 2e-2};
    if (name == "bf16") return {HCCL_DATA_TYPE_BFP16, 2, 5e-2, 5e-2};
    if (name == "int32") return {HCCL_DATA_TYPE_INT32, 4, 0.0, 0.0};
    return {HCCL_DATA_TYPE_FP32, 4, 1e-3, 1e-3};
}

double input_value(const std::string& formula, int rank, uint64_t i) {
    if (formula == "rank_mod16_v1") return static_cast<double>(i % 16) + rank;
    return static_cast<double>(i) + 100.0 * rank;
}

void encode(const std::string& dtype, double v, uint8_t* dst) {
    if (dtype == "fp16") { uint16_t h = float_to_half(static_cast<float>(v)); std::memcpy(dst, &h, 2); }
    else if (dtype == "bf16") { uint16_t b = float_to_bf16(static_cast<float>(v)); std::memcpy(dst, &b, 2); }
    else if (dtype == "int32") { int32_t x = static_cast<int32_t>(v); std::memcpy(dst, &x, 4); }
    else { float x = static_cast<float>(v); std::memcpy(dst, &x, 4); }
}

double decode(const std::string& dtype, const uint8_t* src) {
    if (dtype == "fp16") { uint16_t h; std::memcpy(&h, src, 2); return half_to_float(h); }
    if (dtype == "bf16") { uint16_t b; std::memcpy(&b, src, 2); return bf16_to_float(b); }
    if (dtype == "int32") { int32_t x; std::memcpy(&x, src, 4); return x; }
    float x; std::memcpy(&x, src, 4); return x;
}

// ---------------------------------------------------------------- barrier with a deadline

class Barrier {
public:
    Barrier(int n, double timeout_s)
        : n_(n), timeout_(timeout_s), present_(n, false), last_release_(Clock::now()) {}

    // false when the run was aborted (by a failing rank or a timeout); never blocks past the
    // deadline.
    bool wait(int rank) {
        std::unique_lock<std::mutex> lock(mu_);
        if (aborted_) return false;
        uint64_t gen = generation_;
        present_[rank] = true;
        if (++arrived_ == n_) {
            arrived_ = 0;
            ++generation_;
            std::fill(present_.begin(), present_.end(), false);
            last_release_ = Clock::now();
            cv_.notify_all();
            return true;
        }
        auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_));
        bool released = cv_.wait_until(lock, deadline, [&] { return aborted_ || generation_ != gen; });
        if (aborted_) return false;
        if (!released) {
            abort_locked("rank " + std::to_string(rank) + " waited " + std::to_string(timeout_) +
                         "s at a barrier: a peer rank died or hangs");
            return false;
        }
        return true;
    }

    void abort(const std::string& why) {
        std::lock_guard<std::mutex> lock(mu_);
        abort_locked(why);
    }

    bool aborted() {
        std::lock_guard<std::mutex> lock(mu_);
        return aborted_;
    }

    // The watchdog: when no barrier released for the timeout, every rank is stuck (e.g. all
    // inside a collective whose peer died), so nobody waits at a barrier to notice. Abort,
    // naming the ranks that never arrived.
    void check_progress() {
        std::lock_guard<std::mutex> lock(mu_);
        if (aborted_ || std::chrono::duration<double>(Clock::now() - last_release_).count() < timeout_)
            return;
        std::string missing;
        for (int r = 0; r < n_; ++r)
            if (!present_[r]) missing += (missing.empty() ? "" : ",") + std::to_string(r);
        abort_locked("no progress for " + std::to_string(timeout_) + "s: rank(s) " + missing +
                     " stuck (in HCCL or the runtime)");
    }

    std::string why() {
        std::lock_guard<std::mutex> lock(mu_);
        return why_;
    }

private:
    void abort_locked(const std::string& why) {
        if (!aborted_) {
            aborted_ = true;
            why_ = why;
        }
        cv_.notify_all();
    }

    std::mutex mu_;
    std::condition_variable cv_;
    int n_;
    double timeout_;
    int arrived_ = 0;
    uint64_t generation_ = 0;
    bool aborted_ = false;
    std::string why_;
    std::vector<bool> present_;
    Clock::time_point last_release_;
};

// ---------------------------------------------------------------- the run

struct Shared {
    Options opt;
    Dtype dt;
    HcclRootInfo root_info;
    std::vector<int> logical;            // logical device id per rank
    Barrier barrier;
    Clock::time_point start;
    std::vector<double> setup_done;      // per rank, seconds since start
    std::vector<double> round_s;         // per rank, current round
    std::vector<std::string> mismatch;   // per rank, current round ("" = ok)
    std::atomic<int> finished{0};
    std::mutex done_mu;
    std::condition_variable done_cv;
    double setup_s = 0.0;

    Shared(const Options& o, int p)
        : opt(o), dt(dtype_of(o.dtype)), barrier(p, o.barrier_timeout_s), setup_done(p, 0.0),
          round_s(p, 0.0), mismatch(p) {}
};

std::string per_rank_list(const std::vector<double>& v) {
    std::string s = "[";
    char buf[64];
    for (size_t i = 0; i < v.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%s%.9f", i ? ", " : "", v[i]);
        s += buf;
    }
    return s + "]";
}

#define ACL_OR_FAIL(call)                                                                        \
    do {                                                                                         \
        aclError e_ = (call);                                                                    \
        if (e_ != ACL_SUCCESS) {                                                                 \
            sh.barrier.abort("rank " + std::to_string(rank) + ": " #call " failed with ACL error " + \
                             std::to_string(e_));                                                \
            return;                                                                              \
        }                                                                                        \
    } while (0)

#define HCCL_OR_FAIL(call)                                                                       \
    do {                                                                                         \
        HcclResult r_ = (call);                                                                  \
        if (r_ != HCCL_SUCCESS) {                                                                \
            sh.barrier.abort("rank " + std::to_string(rank) + ": " #call " failed with HCCL error " + \
                             std::to_string(static_cast<int>(r_)));                              \
            return;                                                                              \
        }                                                                                        \
    } while (0)

// x(r, i) as the device holds it (rounded to the dtype).
double rounded_input(const Options& o, int r, uint64_t i) {
    uint8_t tmp[4];
    encode(o.dtype, input_value(o.input_formula, r, i), tmp);
    return decode(o.dtype, tmp);
}

// campaign's golden of the op for element k of rank's output (c = count / P).
double golden_at(const Options& o, int p, int rank, uint64_t k) {
    const uint64_t c = o.count / p;
    auto sum = [&](uint64_t i) {
        double s = 0;
        for (int r = 0; r < p; ++r) s += rounded_input(o, r, i);
        return s;
    };
    if (o.op == "allgather") return rounded_input(o, static_cast<int>(k / c), k % c);
    if (o.op == "reduce_scatter") return sum(rank * c + k);
    if (o.op == "broadcast") return rounded_input(o, o.root, k);
    if (o.op == "alltoall") return rounded_input(o, static_cast<int>(k / c), rank * c + k % c);
    return sum(k);  // allreduce, reduce (root only)
}

// The case's collective on this rank's buffers (c = count / P per block).
HcclResult run_op(const Options& o, const Dtype& dt, void* send, void* recv, HcclComm comm,
                  aclrtStream stream) {
    const uint64_t c = o.count / static_cast<uint64_t>(o.devices.size());
    const uint32_t root = static_cast<uint32_t>(o.root);
    if (o.op == "allgather") return HcclAllGather(send, recv, c, dt.hccl, comm, stream);
    if (o.op == "reduce_scatter")
        return HcclReduceScatter(send, recv, c, dt.hccl, HCCL_REDUCE_SUM, comm, stream);
    if (o.op == "broadcast") return HcclBroadcast(recv, o.count, dt.hccl, root, comm, stream);
    if (o.op == "reduce")
        return HcclReduce(send, recv, o.count, dt.hccl, HCCL_REDUCE_SUM, root, comm, stream);
    if (o.op == "alltoall") return HcclAlltoAll(send, c, dt.hccl, recv, c, dt.hccl, comm, stream);
    return HcclAllReduce(send, recv, o.count, dt.hccl, HCCL_REDUCE_SUM, comm, stream);
}

// The HCCL call behind `op`, as error messages name it.
std::string hccl_call(const std::string& op) {
    if (op == "allgather") return "HcclAllGather";
    if (op == "reduce_scatter") return "HcclReduceScatter";
    if (op == "broadcast") return "HcclBroadcast";
    if (op == "reduce") return "HcclReduce";
    if (op == "alltoall") return "HcclAlltoAll";
    return "HcclAllReduce";
}

// The first element of `host` (the rank's output, copied back) that misses the golden.
struct Mismatch {
    long long index = -1;  // -1: none
    double got = 0;
    std::string text;      // "" when none
};

Mismatch first_mismatch(const Options& o, const Dtype& dt, int rank, const std::vector<uint8_t>& host,
                        const std::vector<double>& expected) {
    Mismatch m;
    for (uint64_t i = 0; i < expected.size(); ++i) {
        double got = decode(o.dtype, host.data() + i * dt.bytes);
        double want = expected[i];
        if (!(std::fabs(got - want) <= dt.atol + dt.rtol * std::fabs(want))) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "rank=%d index=%llu got=%.9g expected=%.9g", rank,
                          static_cast<unsigned long long>(i), got, want);
            m.index = static_cast<long long>(i);
            m.got = got;
            m.text = buf;
            break;
        }
    }
    return m;
}

void rank_body(Shared& sh, int rank) {
    const Options& o = sh.opt;
    const int p = static_cast<int>(o.devices.size());
    const uint64_t c = o.count / p;
    // Elements of this rank's send and receive buffers for the op.
    const uint64_t in_n = o.op == "allgather" ? c : o.count;
    const uint64_t out_n = o.op == "reduce_scatter" ? c : o.count;
    const size_t nbytes = o.count * sh.dt.bytes;
    const size_t in_bytes = in_n * sh.dt.bytes, out_bytes = out_n * sh.dt.bytes;
    const bool checked = o.op != "reduce" || rank == o.root;

    ACL_OR_FAIL(aclrtSetDevice(sh.logical[rank]));
    aclrtStream stream = nullptr;
    ACL_OR_FAIL(aclrtCreateStream(&stream));
    void* send = nullptr;
    void* recv = nullptr;
    ACL_OR_FAIL(aclrtMalloc(&send, in_bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    ACL_OR_FAIL(aclrtMalloc(&recv, out_bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    std::vector<uint8_t> host(nbytes);
    for (uint64_t i = 0; i < in_n; ++i)
        encode(o.dtype, input_value(o.input_formula, rank, i), host.data() + i * sh.dt.bytes);
    ACL_OR_FAIL(aclrtMemcpy(send, in_bytes, host.data(), in_bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    // HcclBroadcast works in place on one buffer: the root's holds its input.
    if (o.op == "broadcast" && rank == o.root)
        ACL_OR_FAIL(aclrtMemcpy(recv, out_bytes, host.data(), out_bytes, ACL_MEMCPY_HOST_TO_DEVICE));

    // Expected output from the dtype-rounded inputs (what the device actually moves or sums).
    std::vector<double> expected(checked ? out_n : 0);
    for (uint64_t k = 0; k < expected.size(); ++k) expected[k] = golden_at(o, p, rank, k);

    // The rank — not the device id — identifies this member of the communicator.
    HcclComm comm = nullptr;
    HCCL_OR_FAIL(HcclCommInitRootInfo(static_cast<uint32_t>(p), &sh.root_info,
                                      static_cast<uint32_t>(rank), &comm));
    sh.setup_done[rank] = seconds_since(sh.start);
    if (!sh.barrier.wait(rank)) return;
    if (rank == 0) {
        sh.setup_s = *std::max_element(sh.setup_done.begin(), sh.setup_done.end());
        std::printf("HCCL_COMM_SETUP_OK world_size=%d setup_s=%.6f\n", p, sh.setup_s);
        std::fflush(stdout);
    }

    const int total = o.warmup + o.timed;
    for (int round = 0; round < total; ++round) {
        const bool timed = round >= o.warmup;
        if (!sh.barrier.wait(rank)) return;
        auto t0 = Clock::now();
        if (HcclResult r_ = run_op(o, sh.dt, send, recv, comm, stream); r_ != HCCL_SUCCESS) {
            sh.barrier.abort("rank " + std::to_string(rank) + ": " + hccl_call(o.op) + " failed with HCCL error " +
                             std::to_string(static_cast<int>(r_)));
            return;
        }
        ACL_OR_FAIL(aclrtSynchronizeStream(stream));
        sh.round_s[rank] = seconds_since(t0);
        sh.mismatch[rank].clear();
        if (timed) {
            // Outside the timed region: every timed round is checked on every rank.
            ACL_OR_FAIL(aclrtMemcpy(host.data(), out_bytes, recv, out_bytes, ACL_MEMCPY_DEVICE_TO_HOST));
            sh.mismatch[rank] = first_mismatch(o, sh.dt, rank, host, expected).text;
        }
        if (!sh.barrier.wait(rank)) return;
        if (rank == 0) {
            int n = timed ? round - o.warmup + 1 : round + 1;
            std::printf("%s round=%d per_rank=%s\n", timed ? "HCCL_TIMED" : "HCCL_WARMUP", n,
                        per_rank_list(sh.round_s).c_str());
            std::fflush(stdout);
            for (int r = 0; r < p; ++r) {
                if (!sh.mismatch[r].empty()) {
                    sh.barrier.abort("golden mismatch round=" + std::to_string(n) + " " + sh.mismatch[r]);
                    break;
                }
            }
        }
    }
    if (!sh.barrier.wait(rank)) return;
    HcclCommDestroy(comm);
    aclrtFree(send);
    aclrtFree(recv);
    aclrtDestroyStream(stream);
    aclrtResetDevice(sh.logical[rank]);
    {
        std::lock_guard<std::mutex> lock(sh.done_mu);
        sh.finished.fetch_add(1);
    }
    sh.done_cv.notify_all();
}

// ---------------------------------------------------------------- one process per rank

// The first of `names` set to a non-negative integer, else -1.
int env_first(std::initializer_list<const char*> names) {
    for (const char* n : names) {
        const char* v = std::getenv(n);
        if (v == nullptr || *v == '\0') continue;
        char* end = nullptr;
        long x = std::strtol(v, &end, 10);
        if (*end == '\0' && x >= 0) return static_cast<int>(x);
    }
    return -1;
}

// Names the job step whose ranks share one root info: a file an earlier job or attempt left in
// the bundle dir is never taken for this one's.
std::string job_tag() {
    const char* job = std::getenv("SLURM_JOB_ID");
    const char* step = std::getenv("SLURM_STEP_ID");
    return std::string(job ? job : "") + "." + (step ? step : "");
}

const char kRootInfoHeader[] = "campaign-hccl-root-info v1 job=";

// Rank 0: the header line, then the 4108 bytes; written to a temporary name, synced, renamed.
bool write_root_info(const std::string& path, const HcclRootInfo& info, int p, std::string& why) {
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) {
        why = "cannot write " + tmp + ": " + std::strerror(errno);
        return false;
    }
    std::fprintf(f, "%s%s world=%d\n", kRootInfoHeader, job_tag().c_str(), p);
    bool ok = std::fwrite(&info, 1, sizeof info, f) == sizeof info;
    ok = std::fflush(f) == 0 && ok;
    ok = fsync(fileno(f)) == 0 && ok;
    ok = std::fclose(f) == 0 && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        why = "cannot write the root info to " + path + ": " + std::strerror(errno);
        return false;
    }
    return true;
}

enum class Handover { Got, Timeout, Bad };

// The other ranks: wait for this job's root info in `path`.
Handover read_root_info(const std::string& path, int p, double timeout_s, HcclRootInfo& info,
                        std::string& why) {
    const std::string mine = std::string(kRootInfoHeader) + job_tag() + " world=";
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout_s));
    for (;;) {
        std::ifstream in(path, std::ios::binary);
        std::string header;
        if (in && std::getline(in, header) && header.rfind(mine, 0) == 0) {
            int world = std::atoi(header.c_str() + mine.size());
            if (world != p) {
                why = "the root info in " + path + " is for " + std::to_string(world) +
                      " ranks, this run has " + std::to_string(p);
                return Handover::Bad;
            }
            in.read(info.internal, sizeof info.internal);
            if (in.gcount() == static_cast<std::streamsize>(sizeof info.internal)) return Handover::Got;
            why = "the root info in " + path + " is truncated";
            return Handover::Bad;
        }
        if (Clock::now() > deadline) return Handover::Timeout;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

// One int32 record per rank per round, gathered to every rank outside the timed region: the
// round's time in ns (two 31-bit halves), the first mismatching index (-1: none) and its value.
constexpr int kRecord = 4;

int32_t value_bits(const std::string& dtype, double got) {
    int32_t bits;
    if (dtype == "int32") return static_cast<int32_t>(got);
    float f = static_cast<float>(got);
    std::memcpy(&bits, &f, 4);
    return bits;
}

double bits_value(const std::string& dtype, int32_t bits) {
    if (dtype == "int32") return bits;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

#define PROC_ACL(call)                                                                          \
    do {                                                                                        \
        aclError e_ = (call);                                                                   \
        if (e_ != ACL_SUCCESS) return fail(#call " failed with ACL error " + std::to_string(e_)); \
    } while (0)

#define PROC_HCCL(call)                                                                         \
    do {                                                                                        \
        HcclResult r_ = (call);                                                                 \
        if (r_ != HCCL_SUCCESS)                                                                 \
            return fail(#call " failed with HCCL error " + std::to_string(static_cast<int>(r_))); \
    } while (0)

// This process is one rank of P on its node's local device; rank 0 prints the round lines.
int run_rank_process(const Options& o) {
    const int p = static_cast<int>(o.devices.size());
    const int rank = o.rank >= 0 ? o.rank
                                 : env_first({"SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"});
    const int local = o.local_device >= 0
                          ? o.local_device
                          : env_first({"SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"});
    if (rank < 0)
        usage("one process per rank needs this process's rank: --rank R, or a launcher that sets "
              "SLURM_PROCID (srun), OMPI_COMM_WORLD_RANK or PMI_RANK");
    if (rank >= p) usage("rank " + std::to_string(rank) + " is not below P = " + std::to_string(p));
    if (local < 0)
        usage("one process per rank needs this rank's local device: --local-device L, or a launcher "
              "that sets SLURM_LOCALID (srun) or OMPI_COMM_WORLD_LOCAL_RANK");
    auto fail = [&](const std::string& why) {
        std::printf("HCCL_ALLREDUCE_FAIL rank %d: %s\n", rank, why.c_str());
        std::fflush(stdout);
        return 1;
    };
    const int ntasks = env_first({"SLURM_NTASKS"});
    if (ntasks > 0 && ntasks != p)
        return fail("the launcher started " + std::to_string(ntasks) + " ranks (SLURM_NTASKS), the case has P = " +
                    std::to_string(p));

    if (!o.algo.empty()) setenv("HCCL_ALGO", o.algo.c_str(), 1);
    if (rank == 0) {
        const char* mode = std::getenv("HCCL_OP_EXPANSION_MODE");
        const char* algo = std::getenv("HCCL_ALGO");
        std::printf("HCCL_CONFIG op_expansion_mode=%s algo=%s\n", mode && *mode ? mode : "(unset)",
                    algo && *algo ? algo : "(unset)");
        std::fflush(stdout);
    }
    const Dtype dt = dtype_of(o.dtype);
    const auto start = Clock::now();
    PROC_ACL(aclInit(nullptr));
    PROC_ACL(aclrtSetDevice(local));
    HcclRootInfo info;
    std::string why;
    const bool from_table = !o.rank_table.empty();
    if (from_table) {
        if (access(o.rank_table.c_str(), R_OK) != 0) {
            std::ifstream reason(o.rank_table + ".error");
            std::string line;
            if (reason && std::getline(reason, line) && !line.empty())
                return fail("no rank table at " + o.rank_table + ": " + line);
            return fail("no rank table at " + o.rank_table + ": " + std::strerror(errno));
        }
    } else if (rank == 0) {
        PROC_HCCL(HcclGetRootInfo(&info));
        if (!write_root_info(o.root_info_file, info, p, why)) return fail(why);
    } else {
        Handover h = read_root_info(o.root_info_file, p, o.barrier_timeout_s, info, why);
        if (h == Handover::Timeout)
            return fail("no root info in " + o.root_info_file + " after " + std::to_string(o.barrier_timeout_s) +
                        "s: rank 0 did not start, or failed before HcclGetRootInfo");
        if (h == Handover::Bad) return fail(why);
    }

    // The watchdog: a peer that died leaves this rank inside a collective for good.
    static std::atomic<int64_t> last_progress{0};
    auto touch = [&] { last_progress = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count(); };
    touch();
    std::thread([&o, rank, start] {
        for (;;) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
            if ((now - last_progress.load()) * 1e-9 > o.barrier_timeout_s) {
                std::printf("HCCL_ALLREDUCE_FAIL rank %d: no progress for %gs: stuck in HCCL or the runtime "
                            "(a peer rank died or hangs)\n", rank, o.barrier_timeout_s);
                std::fflush(stdout);
                _exit(1);
            }
        }
    }).detach();

    const uint64_t c = o.count / p;
    const uint64_t in_n = o.op == "allgather" ? c : o.count;
    const uint64_t out_n = o.op == "reduce_scatter" ? c : o.count;
    const size_t in_bytes = in_n * dt.bytes, out_bytes = out_n * dt.bytes;
    const bool checked = o.op != "reduce" || rank == o.root;
    aclrtStream stream = nullptr;
    PROC_ACL(aclrtCreateStream(&stream));
    void *send = nullptr, *recv = nullptr, *rec_send = nullptr, *rec_all = nullptr;
    PROC_ACL(aclrtMalloc(&send, in_bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    PROC_ACL(aclrtMalloc(&recv, out_bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    PROC_ACL(aclrtMalloc(&rec_send, kRecord * 4, ACL_MEM_MALLOC_HUGE_FIRST));
    PROC_ACL(aclrtMalloc(&rec_all, kRecord * 4 * p, ACL_MEM_MALLOC_HUGE_FIRST));
    std::vector<uint8_t> host(o.count * dt.bytes);
    for (uint64_t i = 0; i < in_n; ++i)
        encode(o.dtype, input_value(o.input_formula, rank, i), host.data() + i * dt.bytes);
    PROC_ACL(aclrtMemcpy(send, in_bytes, host.data(), in_bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    if (o.op == "broadcast" && rank == o.root)
        PROC_ACL(aclrtMemcpy(recv, out_bytes, host.data(), out_bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    std::vector<double> expected(checked ? out_n : 0);
    for (uint64_t k = 0; k < expected.size(); ++k) expected[k] = golden_at(o, p, rank, k);

    // The global rank identifies this member of the communicator.
    HcclComm comm = nullptr;
    if (from_table) {
        PROC_HCCL(HcclCommInitClusterInfo(o.rank_table.c_str(), static_cast<uint32_t>(rank), &comm));
        // The table decides the world; it must be the case's.
        uint32_t world = 0;
        PROC_HCCL(HcclGetRankSize(comm, &world));
        if (static_cast<int>(world) != p)
            return fail("the rank table " + o.rank_table + " has " + std::to_string(world) +
                        " ranks, the case has P = " + std::to_string(p));
    } else {
        PROC_HCCL(HcclCommInitRootInfo(static_cast<uint32_t>(p), &info, static_cast<uint32_t>(rank), &comm));
    }
    touch();

    std::vector<int32_t> all(static_cast<size_t>(kRecord) * p);
    std::vector<double> per_rank(p);
    // Gather every rank's record: also where the ranks meet before the next round.
    auto gather = [&](double seconds, const Mismatch& m) -> HcclResult {
        int64_t ns = static_cast<int64_t>(seconds * 1e9);
        int32_t rec[kRecord] = {static_cast<int32_t>(ns >> 31), static_cast<int32_t>(ns & 0x7fffffff),
                                static_cast<int32_t>(m.index), value_bits(o.dtype, m.got)};
        if (aclrtMemcpy(rec_send, sizeof rec, rec, sizeof rec, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS)
            return HCCL_E_PARA;
        HcclResult r = HcclAllGather(rec_send, rec_all, kRecord, HCCL_DATA_TYPE_INT32, comm, stream);
        if (r != HCCL_SUCCESS) return r;
        if (aclrtSynchronizeStream(stream) != ACL_SUCCESS ||
            aclrtMemcpy(all.data(), all.size() * 4, rec_all, all.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS)
            return HCCL_E_PARA;
        for (int r2 = 0; r2 < p; ++r2)
            per_rank[r2] = ((static_cast<int64_t>(all[r2 * kRecord]) << 31) | all[r2 * kRecord + 1]) * 1e-9;
        touch();
        return HCCL_SUCCESS;
    };
    PROC_HCCL(gather(seconds_since(start), Mismatch{}));
    const double setup_s = *std::max_element(per_rank.begin(), per_rank.end());
    if (rank == 0) {
        std::printf("HCCL_COMM_SETUP_OK world_size=%d setup_s=%.6f\n", p, setup_s);
        std::fflush(stdout);
    }
    const int total = o.warmup + o.timed;
    for (int round = 0; round < total; ++round) {
        const bool timed = round >= o.warmup;
        auto t0 = Clock::now();
        if (HcclResult r_ = run_op(o, dt, send, recv, comm, stream); r_ != HCCL_SUCCESS)
            return fail(hccl_call(o.op) + " failed with HCCL error " + std::to_string(static_cast<int>(r_)));
        PROC_ACL(aclrtSynchronizeStream(stream));
        const double took = seconds_since(t0);
        Mismatch m;
        if (timed) {
            PROC_ACL(aclrtMemcpy(host.data(), out_bytes, recv, out_bytes, ACL_MEMCPY_DEVICE_TO_HOST));
            m = first_mismatch(o, dt, rank, host, expected);
        }
        PROC_HCCL(gather(took, m));
        const int n = timed ? round - o.warmup + 1 : round + 1;
        if (rank == 0) {
            std::printf("%s round=%d per_rank=%s\n", timed ? "HCCL_TIMED" : "HCCL_WARMUP", n,
                        per_rank_list(per_rank).c_str());
            std::fflush(stdout);
        }
        for (int r2 = 0; r2 < p; ++r2) {
            const int32_t index = all[r2 * kRecord + 2];
            if (index < 0) continue;
            if (rank == 0) {
                std::printf("HCCL_ALLREDUCE_FAIL golden mismatch round=%d rank=%d index=%d got=%.9g expected=%.9g\n", n,
                            r2, index, bits_value(o.dtype, all[r2 * kRecord + 3]), golden_at(o, p, r2, index));
                std::fflush(stdout);
            }
            _exit(1);
        }
    }
    HcclCommDestroy(comm);
    aclrtFree(send);
    aclrtFree(recv);
    aclrtFree(rec_send);
    aclrtFree(rec_all);
    aclrtDestroyStream(stream);
    aclrtResetDevice(local);
    aclFinalize();
    if (rank == 0) {
        std::printf("HCCL_ALLREDUCE_OK setup_s=%.6f\n", setup_s);
        std::fflush(stdout);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options opt = parse_args(argc, argv);
    if (!opt.root_info_file.empty() || !opt.rank_table.empty()) return run_rank_process(opt);
    const int p = static_cast<int>(opt.devices.size());
    Shared sh(opt, p);

    // ASCEND_RT_VISIBLE_DEVICES renumbers the listed devices 0..n-1 inside this process: then
    // rank r is logical device r. Without it, the ids given are the runtime's ids.
    const char* visible = std::getenv("ASCEND_RT_VISIBLE_DEVICES");
    sh.logical.resize(p);
    if (visible != nullptr && *visible != '\0') {
        std::vector<int> vis = parse_devices(visible);
        if (static_cast<int>(vis.size()) < p) {
            std::printf("HCCL_ALLREDUCE_FAIL ASCEND_RT_VISIBLE_DEVICES=%s lists %zu devices, need %d\n",
                        visible, vis.size(), p);
            return 1;
        }
        for (int r = 0; r < p; ++r) sh.logical[r] = r;
    } else {
        for (int r = 0; r < p; ++r) sh.logical[r] = opt.devices[r];
    }

    // HCCL reads HCCL_ALGO when the communicator is made; an empty --algo leaves it alone.
    if (!opt.algo.empty()) setenv("HCCL_ALGO", opt.algo.c_str(), 1);
    const char* mode = std::getenv("HCCL_OP_EXPANSION_MODE");
    const char* algo = std::getenv("HCCL_ALGO");
    // What this process asked HCCL for (HCCL falls back silently on a value it does not take;
    // it reads an empty value as unset, and so does this line).
    std::printf("HCCL_CONFIG op_expansion_mode=%s algo=%s\n", mode && *mode ? mode : "(unset)",
                algo && *algo ? algo : "(unset)");

    sh.start = Clock::now();
    if (aclInit(nullptr) != ACL_SUCCESS) {
        std::printf("HCCL_ALLREDUCE_FAIL aclInit failed\n");
        return 1;
    }
    if (aclrtSetDevice(sh.logical[0]) != ACL_SUCCESS) {
        std::printf("HCCL_ALLREDUCE_FAIL aclrtSetDevice(%d) failed\n", sh.logical[0]);
        return 1;
    }
    if (HcclGetRootInfo(&sh.root_info) != HCCL_SUCCESS) {
        std::printf("HCCL_ALLREDUCE_FAIL HcclGetRootInfo failed\n");
        return 1;
    }

    std::vector<std::thread> threads;
    for (int r = 0; r < p; ++r) threads.emplace_back(rank_body, std::ref(sh), r);

    // Wait for every rank, or for an abort. A rank stuck inside HCCL cannot be interrupted, so
    // after an abort the process reports and exits without joining it.
    {
        std::unique_lock<std::mutex> lock(sh.done_mu);
        while (sh.finished.load() < p) {
            sh.done_cv.wait_for(lock, std::chrono::milliseconds(200));
            sh.barrier.check_progress();
            if (sh.barrier.aborted()) break;
        }
    }
    if (sh.barrier.aborted()) {
        std::printf("HCCL_ALLREDUCE_FAIL %s\n", sh.barrier.why().c_str());
        std::fflush(stdout);
        std::fflush(stderr);
        _exit(1);
    }
    for (auto& t : threads) t.join();
    std::printf("HCCL_ALLREDUCE_OK setup_s=%.6f\n", sh.setup_s);
    std::fflush(stdout);
    aclrtResetDevice(sh.logical[0]);
    aclFinalize();
    return 0;
}
