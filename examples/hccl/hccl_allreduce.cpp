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
// Build: see build.sh (g++ -std=c++17 -O2 -pthread … -lhccl -lascendcl).

#include <acl/acl.h>
#include <hccl/hccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
                 "       [--root R]\n",
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
        if (o.op == "allgather")
            HCCL_OR_FAIL(HcclAllGather(send, recv, c, sh.dt.hccl, comm, stream));
        else if (o.op == "reduce_scatter")
            HCCL_OR_FAIL(HcclReduceScatter(send, recv, c, sh.dt.hccl, HCCL_REDUCE_SUM, comm, stream));
        else if (o.op == "broadcast")
            HCCL_OR_FAIL(HcclBroadcast(recv, o.count, sh.dt.hccl, static_cast<uint32_t>(o.root), comm, stream));
        else if (o.op == "reduce")
            HCCL_OR_FAIL(HcclReduce(send, recv, o.count, sh.dt.hccl, HCCL_REDUCE_SUM,
                                    static_cast<uint32_t>(o.root), comm, stream));
        else if (o.op == "alltoall")
            HCCL_OR_FAIL(HcclAlltoAll(send, c, sh.dt.hccl, recv, c, sh.dt.hccl, comm, stream));
        else
            HCCL_OR_FAIL(HcclAllReduce(send, recv, o.count, sh.dt.hccl, HCCL_REDUCE_SUM, comm, stream));
        ACL_OR_FAIL(aclrtSynchronizeStream(stream));
        sh.round_s[rank] = seconds_since(t0);
        sh.mismatch[rank].clear();
        if (timed) {
            // Outside the timed region: every timed round is checked on every rank.
            ACL_OR_FAIL(aclrtMemcpy(host.data(), out_bytes, recv, out_bytes, ACL_MEMCPY_DEVICE_TO_HOST));
            for (uint64_t i = 0; i < expected.size(); ++i) {
                double got = decode(o.dtype, host.data() + i * sh.dt.bytes);
                double want = expected[i];
                if (!(std::fabs(got - want) <= sh.dt.atol + sh.dt.rtol * std::fabs(want))) {
                    char buf[160];
                    std::snprintf(buf, sizeof buf, "rank=%d index=%llu got=%.9g expected=%.9g", rank,
                                  static_cast<unsigned long long>(i), got, want);
                    sh.mismatch[rank] = buf;
                    break;
                }
            }
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

}  // namespace

int main(int argc, char** argv) {
    Options opt = parse_args(argc, argv);
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
    // What this process asked HCCL for (HCCL falls back silently on a value it does not take).
    std::printf("HCCL_CONFIG op_expansion_mode=%s algo=%s\n", mode ? mode : "(unset)",
                algo ? algo : "(unset)");

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
