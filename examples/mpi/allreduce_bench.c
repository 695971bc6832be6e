/*
 * allreduce_bench — OpenMPI's collectives as a campaign stack.
 *
 * Runs one campaign case (P ranks = the MPI world, `count` elements of `dtype` per rank,
 * warmup + timed rounds) of the case's `op` — MPI_Allreduce (default), MPI_Allgather,
 * MPI_Reduce_scatter_block, MPI_Bcast, MPI_Reduce or MPI_Alltoall (count is the op's whole
 * buffer per rank; the chunked ops move count / P per block, as campaign's docs/plan-format.md
 * defines) — and speaks campaign's native stack protocol on rank 0's stdout:
 *
 *   CAMPAIGN_SAMPLE {"phase":"warmup"|"timed","round":n,"execute_s":…,
 *                    "per_rank_execute_s":[…],"setup_s":… (first sample only),"ok":true|false,
 *                    "checked":true|false}
 *   CAMPAIGN_DONE {"correctness":"pass"|"fail","error":"…" (on failure)}
 *
 * A round is: MPI_Barrier, then the collective (MPI_Allreduce below stands for any op) timed
 * with MPI_Wtime on every rank — exactly what
 * a bare `MPI_Barrier; t = MPI_Wtime(); MPI_Allreduce; slowest rank` loop times. The round's
 * execute_s is the slowest rank's time (the collective is done when the last rank is done).
 * The golden check (every rank compares its whole output with allreduce_sum_v1 of the case's
 * input formula, with the dtype's tolerance) runs, by default (--check ends), on the first round
 * of the run and on the last timed round only: nothing at all happens between the timed rounds,
 * as in a bare loop. A check of a large buffer is a CPU burst, and the round after it absorbs
 * the preemption it provokes (12.9x a bare loop at 1 Mi fp32, P=2, when every round was
 * checked); the first round is a warmup round whenever warmup >= 2, and after the last timed
 * round nothing is timed. The last round writes into a second output buffer, poisoned at setup,
 * so an allreduce that wrote nothing in it is caught. Rounds not checked print "checked":false
 * (their "ok" then means the round completed). --check every (or $ALLREDUCE_BENCH_CHECK=every)
 * checks and re-poisons after every round, outside the timed region, as before. Reports stay in
 * memory; only after the last round are they gathered to rank 0 (one MPI_Gather) and printed, so
 * no rank does I/O or waits on rank 0's output while others time (benches/mpi_fairness.sh
 * measures the difference against a bare loop).
 *
 * The case comes from --case-file FILE, else from $CAMPAIGN_CASE_FILE (a seed case JSON file),
 * and any of its values may be overridden by arguments (see usage()). fp16 travels as 16-bit
 * words with a user-defined MPI_Op that adds in float and rounds back to half (round to nearest
 * even), as an fp16 allreduce on a device would.
 *
 * Exit codes: 0 golden passed, 1 golden failed, 2 bad input (bad arguments or case file,
 * unsupported dtype, values out of the dtype's range, P different from the MPI world size).
 *
 * Build: mpicc -O2 -Wall -Wextra -o allreduce_bench allreduce_bench.c
 */

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#define EXIT_PASS 0
#define EXIT_GOLDEN 1
#define EXIT_BAD_INPUT 2

#define FP16_MAX 65504.0

enum dtype { DT_FP32, DT_FP16, DT_INT32 };

/* The case as far as this benchmark needs it. Negative / empty = not given. */
struct bench_case {
    long long p;
    long long count;
    char dtype[16];
    long long warmup;
    long long timed;
    char input_formula[32];
    char golden[32];
    long long fault_rank; /* --inject-fault: this rank spoils one output element per timed round */
    int check_every;      /* --check every: golden check after every round, not first + last */
    char op[32];          /* allreduce (default), allgather, reduce_scatter, broadcast, ... */
    long long root;       /* broadcast / reduce root, default 0 */
    char variant[72];     /* Open MPI tuned algorithm to pin, or "default" / "" (its own choice) */
};

enum op_kind { OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCE_SCATTER, OP_BROADCAST, OP_REDUCE, OP_ALLTOALL };
static const char *const OP_NAMES[] = {"allreduce", "allgather", "reduce_scatter",
                                       "broadcast", "reduce",    "alltoall"};
static const char *const OP_GOLDENS[] = {"allreduce_sum_v1",      "allgather_concat_v1",
                                         "reduce_scatter_sum_v1", "broadcast_copy_v1",
                                         "reduce_sum_v1",         "alltoall_transpose_v1"};
static enum op_kind g_op = OP_ALLREDUCE;
static int g_root = 0;

/* One rank's report of a round, gathered to rank 0 in one MPI_Gather of doubles. */
enum { R_EXEC, R_CHECKED, R_WRONG, R_INDEX, R_VALUE, R_EXPECTED, R_FIELDS };

static char g_error[1024];

static void set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_error, sizeof g_error, fmt, ap);
    va_end(ap);
}

static double monotonic_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------------------------ */
/* A small JSON reader: walks the top-level object of a case file and keeps the few scalar    */
/* keys the benchmark needs. Nested values are parsed and skipped; errors name line:column.   */
/* ------------------------------------------------------------------------------------------ */

struct json {
    const char *text;
    size_t len;
    size_t pos;
    const char *file;
};

static int json_fail(struct json *j, const char *what) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < j->pos && i < j->len; i++) {
        if (j->text[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    set_error("%s:%zu:%zu: %s", j->file, line, col, what);
    return -1;
}

static void json_ws(struct json *j) {
    while (j->pos < j->len && isspace((unsigned char)j->text[j->pos])) j->pos++;
}

/* Parses a string at pos into out (truncated to cap-1 bytes; escapes other than the simple
 * ones are kept verbatim, which is enough for the ASCII values of a case file). */
static int json_string(struct json *j, char *out, size_t cap) {
    size_t n = 0;
    if (j->pos >= j->len || j->text[j->pos] != '"') return json_fail(j, "expected a string");
    j->pos++;
    while (j->pos < j->len) {
        char c = j->text[j->pos++];
        if (c == '"') {
            if (out && cap) out[n < cap ? n : cap - 1] = '\0';
            return 0;
        }
        if (c == '\\') {
            if (j->pos >= j->len) break;
            char e = j->text[j->pos++];
            switch (e) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u':
                if (j->len - j->pos < 4) return json_fail(j, "truncated \\u escape");
                j->pos += 4;
                c = '?';
                break;
            default: c = e; break;
            }
        } else if ((unsigned char)c < 0x20) {
            return json_fail(j, "control character inside a string");
        }
        if (out && n + 1 < cap) out[n] = c;
        n++;
    }
    return json_fail(j, "unterminated string");
}

static int json_value(struct json *j, int depth);

static int json_container(struct json *j, int depth, char close) {
    j->pos++; /* the opening bracket */
    json_ws(j);
    if (j->pos < j->len && j->text[j->pos] == close) {
        j->pos++;
        return 0;
    }
    for (;;) {
        json_ws(j);
        if (close == '}') {
            if (json_string(j, NULL, 0)) return -1;
            json_ws(j);
            if (j->pos >= j->len || j->text[j->pos] != ':') return json_fail(j, "expected ':'");
            j->pos++;
        }
        if (json_value(j, depth + 1)) return -1;
        json_ws(j);
        if (j->pos < j->len && j->text[j->pos] == ',') {
            j->pos++;
            continue;
        }
        if (j->pos < j->len && j->text[j->pos] == close) {
            j->pos++;
            return 0;
        }
        return json_fail(j, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

/* Skips one value of any kind. */
static int json_value(struct json *j, int depth) {
    json_ws(j);
    if (depth > 64) return json_fail(j, "nesting too deep");
    if (j->pos >= j->len) return json_fail(j, "unexpected end of file");
    char c = j->text[j->pos];
    if (c == '{') return json_container(j, depth, '}');
    if (c == '[') return json_container(j, depth, ']');
    if (c == '"') return json_string(j, NULL, 0);
    const char *words[] = {"true", "false", "null"};
    for (size_t w = 0; w < 3; w++) {
        size_t n = strlen(words[w]);
        if (j->len - j->pos >= n && strncmp(j->text + j->pos, words[w], n) == 0) {
            j->pos += n;
            return 0;
        }
    }
    size_t start = j->pos;
    while (j->pos < j->len && strchr("+-0123456789.eE", j->text[j->pos])) j->pos++;
    if (j->pos == start) return json_fail(j, "expected a JSON value");
    return 0;
}

/* Reads an integer value for `key` (rejects fractions, signs where negative, and non-numbers). */
static int json_int(struct json *j, const char *key, long long *out) {
    json_ws(j);
    size_t start = j->pos;
    if (j->pos < j->len && j->text[j->pos] == 'n') { /* null = not given */
        if (json_value(j, 0)) return -1;
        return 0;
    }
    char buf[32];
    size_t n = 0;
    while (j->pos < j->len && strchr("+-0123456789.eE", j->text[j->pos]) && n + 1 < sizeof buf)
        buf[n++] = j->text[j->pos++];
    buf[n] = '\0';
    char *end = NULL;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (n == 0 || *end != '\0' || errno) {
        j->pos = start;
        char msg[96];
        snprintf(msg, sizeof msg, "\"%s\": expected an integer", key);
        return json_fail(j, msg);
    }
    *out = v;
    return 0;
}

static int json_str_key(struct json *j, const char *key, char *out, size_t cap) {
    json_ws(j);
    if (j->pos < j->len && j->text[j->pos] != '"') {
        char msg[96];
        snprintf(msg, sizeof msg, "\"%s\": expected a string", key);
        return json_fail(j, msg);
    }
    return json_string(j, out, cap);
}

static int read_case_file(const char *path, struct bench_case *c) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        set_error("%s: cannot open case file: %s", path, strerror(errno));
        return -1;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 8192;
            char *grown = realloc(text, cap);
            if (!grown) {
                free(text);
                fclose(f);
                set_error("%s: out of memory reading the case file", path);
                return -1;
            }
            text = grown;
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    fclose(f);

    struct json j = {text, len, 0, path};
    int rc = 0;
    json_ws(&j);
    if (j.pos >= j.len || j.text[j.pos] != '{') {
        rc = json_fail(&j, "expected a JSON object (a seed case file)");
        goto done;
    }
    j.pos++;
    json_ws(&j);
    if (j.pos < j.len && j.text[j.pos] == '}') {
        j.pos++;
    } else {
        for (;;) {
            char key[64];
            json_ws(&j);
            if ((rc = json_string(&j, key, sizeof key))) goto done;
            json_ws(&j);
            if (j.pos >= j.len || j.text[j.pos] != ':') {
                rc = json_fail(&j, "expected ':' after a key");
                goto done;
            }
            j.pos++;
            if (!strcmp(key, "p")) rc = json_int(&j, key, &c->p);
            else if (!strcmp(key, "count")) rc = json_int(&j, key, &c->count);
            else if (!strcmp(key, "warmup_rounds")) rc = json_int(&j, key, &c->warmup);
            else if (!strcmp(key, "timed_rounds")) rc = json_int(&j, key, &c->timed);
            else if (!strcmp(key, "dtype")) rc = json_str_key(&j, key, c->dtype, sizeof c->dtype);
            else if (!strcmp(key, "input_formula"))
                rc = json_str_key(&j, key, c->input_formula, sizeof c->input_formula);
            else if (!strcmp(key, "golden")) rc = json_str_key(&j, key, c->golden, sizeof c->golden);
            else if (!strcmp(key, "op")) rc = json_str_key(&j, key, c->op, sizeof c->op);
            else if (!strcmp(key, "root")) rc = json_int(&j, key, &c->root);
            else if (!strcmp(key, "variant"))
                rc = json_str_key(&j, key, c->variant, sizeof c->variant);
            else rc = json_value(&j, 1);
            if (rc) goto done;
            json_ws(&j);
            if (j.pos < j.len && j.text[j.pos] == ',') {
                j.pos++;
                continue;
            }
            if (j.pos < j.len && j.text[j.pos] == '}') {
                j.pos++;
                break;
            }
            rc = json_fail(&j, "expected ',' or '}'");
            goto done;
        }
    }
    json_ws(&j);
    if (j.pos != j.len) rc = json_fail(&j, "unexpected text after the case object");
done:
    free(text);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Arguments                                                                                  */
/* ------------------------------------------------------------------------------------------ */

static void usage(FILE *to) {
    fprintf(to,
            "usage: mpirun -np P allreduce_bench [--case-file FILE] [--p P] [--count N]\n"
            "           [--dtype fp32|fp16|int32] [--warmup N] [--timed N]\n"
            "           [--input-formula rank_linear_v1|rank_mod16_v1] [--inject-fault RANK]\n"
            "           [--check ends|every] [--op OP] [--root RANK] [--variant ALGORITHM]\n"
            "OP: allreduce (default), allgather, reduce_scatter, broadcast, reduce, alltoall.\n"
            "ALGORITHM: one of Open MPI's tuned algorithms of the op, by its name (pinned with\n"
            "coll_tuned_use_dynamic_rules=1 and coll_tuned_<op>_algorithm, read back through\n"
            "MPI_T); \"default\" or none: Open MPI's own choice.\n"
            "The case file defaults to $CAMPAIGN_CASE_FILE; arguments override its values.\n"
            "Defaults: dtype fp32, warmup 3, timed 20, rank_linear_v1. P must equal the MPI world.\n"
            "--inject-fault RANK spoils one output element on RANK after every timed round\n"
            "(outside the timed region) to prove that the golden check catches it.\n"
            "--check ends (default) checks the golden after the first round and the last timed\n"
            "round only, so nothing runs between timed rounds; --check every checks after every\n"
            "round (outside the timed region). Default from $ALLREDUCE_BENCH_CHECK.\n");
}

static int parse_ll(const char *flag, const char *text, long long *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (!*text || *end || errno) {
        set_error("%s: expected an integer, got \"%s\"", flag, text);
        return -1;
    }
    *out = v;
    return 0;
}

/* Applies the case file and then the arguments over it. Returns 0, -1 on error, 1 for --help. */
static int parse_check(const char *flag, const char *text, int *every) {
    if (!strcmp(text, "every")) *every = 1;
    else if (!strcmp(text, "ends")) *every = 0;
    else {
        set_error("%s: expected \"ends\" or \"every\", got \"%s\"", flag, text);
        return -1;
    }
    return 0;
}

static int parse_args(int argc, char **argv, struct bench_case *c) {
    const char *check = getenv("ALLREDUCE_BENCH_CHECK");
    if (check && *check && parse_check("ALLREDUCE_BENCH_CHECK", check, &c->check_every)) return -1;
    const char *case_file = getenv("CAMPAIGN_CASE_FILE");
    if (case_file && !*case_file) case_file = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
        if (!strcmp(argv[i], "--case-file")) {
            if (i + 1 >= argc) {
                set_error("--case-file needs a path");
                return -1;
            }
            case_file = argv[++i];
        }
    }
    if (case_file && read_case_file(case_file, c)) return -1;

    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (!strcmp(flag, "--case-file")) {
            i++;
            continue;
        }
        if (i + 1 >= argc) {
            set_error("unknown or incomplete argument \"%s\" (try --help)", flag);
            return -1;
        }
        const char *val = argv[++i];
        int rc = 0;
        if (!strcmp(flag, "--p")) rc = parse_ll(flag, val, &c->p);
        else if (!strcmp(flag, "--count")) rc = parse_ll(flag, val, &c->count);
        else if (!strcmp(flag, "--warmup")) rc = parse_ll(flag, val, &c->warmup);
        else if (!strcmp(flag, "--timed")) rc = parse_ll(flag, val, &c->timed);
        else if (!strcmp(flag, "--inject-fault")) rc = parse_ll(flag, val, &c->fault_rank);
        else if (!strcmp(flag, "--check")) rc = parse_check(flag, val, &c->check_every);
        else if (!strcmp(flag, "--root")) rc = parse_ll(flag, val, &c->root);
        else if (!strcmp(flag, "--op")) snprintf(c->op, sizeof c->op, "%s", val);
        else if (!strcmp(flag, "--variant")) snprintf(c->variant, sizeof c->variant, "%s", val);
        else if (!strcmp(flag, "--dtype")) snprintf(c->dtype, sizeof c->dtype, "%s", val);
        else if (!strcmp(flag, "--input-formula"))
            snprintf(c->input_formula, sizeof c->input_formula, "%s", val);
        else {
            set_error("unknown argument \"%s\" (try --help)", flag);
            return -1;
        }
        if (rc) return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Algorithm pin (Open MPI's tuned component)                                                 */
/* ------------------------------------------------------------------------------------------ */

/* Open MPI's tuned algorithms of each op (index = the number coll_tuned_<op>_algorithm takes),
 * named as ompi/mca/coll/tuned/coll_tuned_<op>_decision.c names them at HEAD; campaign's
 * stacks/mpi.toml lists the same names as the mpi stack's variants. Numbers, not names, are
 * set: Open MPI 4.1 names algorithm 2 of allgather "bruck" where HEAD says "bruck-k-fanout". */
static const char *const TUNED_ALLREDUCE[] = {"ignore", "basic_linear", "nonoverlapping",
                                              "recursive_doubling", "ring", "segmented_ring",
                                              "rabenseifner", "allgather_reduce", NULL};
static const char *const TUNED_ALLGATHER[] = {"ignore", "linear", "bruck-k-fanout",
                                              "recursive_doubling", "ring", "neighbor",
                                              "two_proc", "sparbit", "direct-messaging", NULL};
static const char *const TUNED_REDUCE_SCATTER[] = {"ignore", "basic_linear", "recursive_doubling",
                                                   "recursive_halving", "butterfly", NULL};
static const char *const TUNED_BCAST[] = {"ignore", "basic_linear", "chain", "pipeline",
                                          "split_binary_tree", "binary_tree", "binomial",
                                          "knomial", "scatter_allgather",
                                          "scatter_allgather_ring", NULL};
static const char *const TUNED_REDUCE[] = {"ignore", "linear", "chain", "pipeline", "binary",
                                           "binomial", "in-order_binary", "rabenseifner",
                                           "knomial", NULL};
static const char *const TUNED_ALLTOALL[] = {"ignore", "linear", "pairwise", "modified_bruck",
                                             "linear_sync", "two_proc", NULL};
/* Per op (OP_NAMES order): the table and the tuned parameter's op name (MPI_Reduce_scatter_block
 * is `reduce_scatter_block`, MPI_Bcast `bcast`). */
static const char *const *const TUNED_TABLES[] = {TUNED_ALLREDUCE, TUNED_ALLGATHER,
                                                  TUNED_REDUCE_SCATTER, TUNED_BCAST,
                                                  TUNED_REDUCE, TUNED_ALLTOALL};
static const char *const TUNED_OPS[] = {"allreduce", "allgather", "reduce_scatter_block",
                                        "bcast", "reduce", "alltoall"};

static int op_index(const char *name) {
    if (!name || !*name) return 0;
    for (int i = 0; i < 6; i++)
        if (!strcmp(name, OP_NAMES[i])) return i;
    return -1;
}

/* Puts the case's pin into the environment: the algorithm number (>= 1), 0 for Open MPI's own
 * choice (no variant, or "default"), -1 when the variant is no algorithm of the op (reported
 * by check_pin after MPI_Init). */
static int pin_algorithm(const struct bench_case *c) {
    if (!c->variant[0] || !strcmp(c->variant, "default")) return 0;
    int op = op_index(c->op);
    if (op < 0) return -1;
    const char *const *names = TUNED_TABLES[op];
    for (int n = 1; names[n]; n++) {
        if (!strcmp(names[n], c->variant)) {
            char key[96], value[16];
            snprintf(key, sizeof key, "OMPI_MCA_coll_tuned_%s_algorithm", TUNED_OPS[op]);
            snprintf(value, sizeof value, "%d", n);
            setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1", 1);
            setenv(key, value, 1);
            return n;
        }
    }
    return -1;
}

/* The value Open MPI holds for control variable `name` (MPI_T), and its enumeration's names of
 * the values 1.. joined into `valid`; -1 when the variable does not exist. */
static int read_cvar(const char *name, char *valid, size_t cap, char *held_name,
                     size_t held_cap) {
    int index = -1, value = -1, count = 0, verbosity, bind, scope, name_len, desc_len;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    MPI_T_cvar_handle handle;
    char cname[256], desc[8];
    valid[0] = '\0';
    if (held_name) held_name[0] = '\0';
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS) return -1;
    name_len = sizeof cname;
    desc_len = sizeof desc;
    if (MPI_T_cvar_get_info(index, cname, &name_len, &verbosity, &type, &enumtype, desc, &desc_len,
                            &bind, &scope) != MPI_SUCCESS ||
        (type != MPI_INT && type != MPI_C_BOOL))
        return -1;
    if (MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) != MPI_SUCCESS) return -1;
    /* An int, or a bool (one byte in Open MPI): read into a zeroed buffer of either. */
    union {
        int i;
        unsigned char b[16];
    } buf;
    memset(&buf, 0, sizeof buf);
    if (count != 1 || MPI_T_cvar_read(handle, &buf) != MPI_SUCCESS) value = -1;
    else value = type == MPI_INT ? buf.i : buf.b[0] != 0;
    MPI_T_cvar_handle_free(&handle);
    int items = 0;
    if (enumtype != MPI_T_ENUM_NULL && MPI_T_enum_get_info(enumtype, &items, cname, &name_len) ==
                                           MPI_SUCCESS) {
        for (int i = 0; i < items; i++) {
            int v = 0, len = sizeof cname;
            if (MPI_T_enum_get_item(enumtype, i, &v, cname, &len) != MPI_SUCCESS || v == 0)
                continue;
            /* The library's own name of the value it holds: what ran, in its words. */
            if (held_name && v == value) snprintf(held_name, held_cap, "%s", cname);
            size_t used = strlen(valid);
            snprintf(valid + used, cap - used, "%s%d:%s", used ? ", " : "", v, cname);
        }
    }
    return value;
}

/* After MPI_Init: a variant that is no algorithm of the op is bad input, and a pin Open MPI did
 * not take (a number its version does not have, a parameter it does not know) is never run as
 * its own choice in silence: both fail the run, naming what Open MPI has. Rank 0 notes on
 * stderr what MPI_T read back, the proof of what the library was told to run. */
static int check_pin(const struct bench_case *c, int pinned, int rank) {
    int op = (int)g_op;
    if (pinned == 0) return 0;
    if (pinned < 0) {
        char list[512] = "";
        for (int n = 1; TUNED_TABLES[op][n]; n++) {
            size_t used = strlen(list);
            snprintf(list + used, sizeof list - used, "%s%s", n > 1 ? ", " : "",
                     TUNED_TABLES[op][n]);
        }
        set_error("variant \"%s\" is not one of Open MPI's tuned %s algorithms (default, %s)",
                  c->variant, OP_NAMES[op], list);
        return -1;
    }
    int provided = 0;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        set_error("variant \"%s\": MPI_T_init_thread failed, so the pin cannot be read back",
                  c->variant);
        return -1;
    }
    char name[96], valid[1024], held_name[256];
    snprintf(name, sizeof name, "coll_tuned_%s_algorithm", TUNED_OPS[op]);
    int held = read_cvar(name, valid, sizeof valid, held_name, sizeof held_name);
    char rules_valid[64];
    int dynamic =
        read_cvar("coll_tuned_use_dynamic_rules", rules_valid, sizeof rules_valid, NULL, 0);
    MPI_T_finalize();
    if (held != pinned || dynamic != 1) {
        set_error("variant \"%s\" (%s = %d) not taken by this Open MPI: it holds %s = %d and "
                  "coll_tuned_use_dynamic_rules = %d (its %s algorithms: %s)",
                  c->variant, name, pinned, name, held, dynamic, OP_NAMES[op],
                  valid[0] ? valid : "none readable");
        return -1;
    }
    /* Numbers are stable across versions, names not always (HEAD's `bruck-k-fanout` is 4.1's
     * `bruck`): the library's own name of the number it holds must be the variant asked for,
     * else this is another algorithm than the plan named. */
    if (held_name[0] && strcmp(held_name, c->variant) != 0) {
        set_error("variant \"%s\" is %s = %d at Open MPI HEAD, which this Open MPI names \"%s\" "
                  "(its %s algorithms: %s)",
                  c->variant, name, pinned, held_name, OP_NAMES[op], valid);
        return -1;
    }
    /* What `[stacks.mpi.ran]` records as the algorithm that ran: the library's own name of the
     * number it holds (HEAD's table where its enumerator is not readable). */
    if (rank == 0)
        fprintf(stderr, "allreduce_bench: pinned %s = %d (%s), read back through MPI_T\n", name,
                held, held_name[0] ? held_name : TUNED_TABLES[op][held]);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Golden                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static int mod16_formula;

static double input_value(int rank, long long i) {
    return mod16_formula ? (double)(i % 16) + rank : (double)i + 100.0 * rank;
}

static double expected_value(int p, long long i) {
    double rank_sum = (double)p * (p - 1) / 2.0;
    return mod16_formula ? (double)p * (double)(i % 16) + rank_sum
                         : (double)p * (double)i + 100.0 * rank_sum;
}

/* Elements of one rank's send and receive buffers (see the top comment). */
static long long send_len(long long count, int p) { return g_op == OP_ALLGATHER ? count / p : count; }
static long long recv_len(long long count, int p) {
    return g_op == OP_REDUCE_SCATTER ? count / p : count;
}

/* Is rank's output defined by the op (reduce: only the root's)? */
static int checks_rank(int rank) { return g_op != OP_REDUCE || rank == g_root; }

/* campaign's golden of the op (src/model/case/golden.rs): element k of rank's output. */
static double golden_at(int p, long long count, int rank, long long k) {
    long long c = count / p;
    switch (g_op) {
    case OP_ALLGATHER: return input_value((int)(k / c), k % c);
    case OP_REDUCE_SCATTER: return expected_value(p, (long long)rank * c + k);
    case OP_BROADCAST: return input_value(g_root, k);
    case OP_ALLTOALL: return input_value((int)(k / c), (long long)rank * c + k % c);
    default: return expected_value(p, k);
    }
}

/* Checks and completes the case; the message names the field and what was expected. */
static int validate(struct bench_case *c, int world, enum dtype *dt) {
    if (c->p >= 0 && c->p != world) {
        set_error("the case has p=%lld but MPI runs %d ranks (mpirun -np must equal p)", c->p, world);
        return -1;
    }
    if (world < 2) {
        set_error("an allreduce needs at least 2 ranks, MPI runs %d", world);
        return -1;
    }
    if (c->count < 0) {
        set_error("no count: give --count N or a case file with \"count\" (--help)");
        return -1;
    }
    if (c->count == 0 || c->count > INT_MAX) {
        set_error("count %lld out of range (expected 1 .. %d)", c->count, INT_MAX);
        return -1;
    }
    if (!c->dtype[0]) strcpy(c->dtype, "fp32");
    if (!strcmp(c->dtype, "fp32")) *dt = DT_FP32;
    else if (!strcmp(c->dtype, "fp16")) *dt = DT_FP16;
    else if (!strcmp(c->dtype, "int32")) *dt = DT_INT32;
    else {
        set_error("dtype \"%s\" not supported by the mpi stack (expected fp32, fp16 or int32)",
                  c->dtype);
        return -1;
    }
    if (c->warmup < 0) c->warmup = 3;
    if (c->timed < 0) c->timed = 20;
    if (c->warmup > 1000000 || c->timed < 1 || c->timed > 1000000) {
        set_error("rounds out of range: warmup %lld (expected 0 .. 1000000), timed %lld "
                  "(expected 1 .. 1000000)",
                  c->warmup, c->timed);
        return -1;
    }
    if (!c->input_formula[0]) strcpy(c->input_formula, "rank_linear_v1");
    if (!strcmp(c->input_formula, "rank_mod16_v1")) mod16_formula = 1;
    else if (strcmp(c->input_formula, "rank_linear_v1")) {
        set_error("input_formula \"%s\" unknown (expected rank_linear_v1 or rank_mod16_v1)",
                  c->input_formula);
        return -1;
    }
    if (c->fault_rank >= world) {
        set_error("--inject-fault %lld: no such rank (expected 0 .. %d)", c->fault_rank, world - 1);
        return -1;
    }
    if (!c->op[0]) strcpy(c->op, "allreduce");
    int known = 0;
    for (int k = 0; k < 6; k++)
        if (!strcmp(c->op, OP_NAMES[k])) g_op = (enum op_kind)k, known = 1;
    if (!known) {
        set_error("op \"%s\" unknown (expected allreduce, allgather, reduce_scatter, broadcast, "
                  "reduce or alltoall)", c->op);
        return -1;
    }
    if (c->root < 0) c->root = 0;
    if (c->root >= world) {
        set_error("root %lld is not a rank (expected 0 .. %d)", c->root, world - 1);
        return -1;
    }
    g_root = (int)c->root;
    int chunked = g_op == OP_ALLGATHER || g_op == OP_REDUCE_SCATTER || g_op == OP_ALLTOALL;
    if (chunked && c->count % world) {
        set_error("%s needs count divisible by p: count %lld, p %d", c->op, c->count, world);
        return -1;
    }
    /* The seed's default golden stands for "the op's own" (campaign writes the op's). */
    if (c->golden[0] && strcmp(c->golden, OP_GOLDENS[g_op]) && strcmp(c->golden, OP_GOLDENS[0])) {
        set_error("golden \"%s\" unknown for %s (expected %s)", c->golden, c->op, OP_GOLDENS[g_op]);
        return -1;
    }
    long long last = mod16_formula ? (c->count - 1 < 15 ? c->count - 1 : 15) : c->count - 1;
    double largest = expected_value(world, last);
    if (g_op == OP_ALLGATHER || g_op == OP_BROADCAST || g_op == OP_ALLTOALL) {
        long long in_last = send_len(c->count, world) - 1;
        if (mod16_formula && in_last > 15) in_last = 15;
        largest = input_value(world - 1, in_last);
    }
    double limit = *dt == DT_FP16 ? FP16_MAX : *dt == DT_INT32 ? (double)INT32_MAX : 3.4e38;
    if (largest > limit) {
        set_error("the largest expected value %.0f exceeds %s's maximum %.0f; use "
                  "input_formula \"rank_mod16_v1\" (stays in range for every size)",
                  largest, c->dtype, limit);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* fp16 as 16-bit words                                                                       */
/* ------------------------------------------------------------------------------------------ */

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24 is exact in float */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    if (exp == 31) bits = sign | 0x7f800000u | (man << 13);
    else bits = sign | ((exp + 112u) << 23) | (man << 13);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Rounds to nearest, ties to even; overflow becomes infinity. */
static uint16_t float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0u));
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return sign;
        uint32_t full = man | 0x800000u;
        int shift = 14 - e;
        uint32_t h = full >> shift;
        uint32_t rem = full & ((1u << shift) - 1u);
        uint32_t halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* a carry into exp is correct */
    return (uint16_t)(sign | h);
}

static void fp16_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++) b[i] = float_to_half(half_to_float(a[i]) + half_to_float(b[i]));
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers                                                                                    */
/* ------------------------------------------------------------------------------------------ */

static size_t elem_bytes(enum dtype dt) { return dt == DT_FP16 ? 2 : 4; }

static void fill_input(void *buf, enum dtype dt, int rank, long long count) {
    for (long long i = 0; i < count; i++) {
        double v = input_value(rank, i);
        if (dt == DT_FP32) ((float *)buf)[i] = (float)v;
        else if (dt == DT_INT32) ((int32_t *)buf)[i] = (int32_t)v;
        else ((uint16_t *)buf)[i] = float_to_half((float)v);
    }
}

/* A value no golden element has (negative), so an allreduce that wrote nothing is caught. */
static void poison(void *buf, enum dtype dt, long long count) {
    memset(buf, 0xff, (size_t)count * elem_bytes(dt));
}

static double element(const void *buf, enum dtype dt, long long i) {
    if (dt == DT_FP32) return ((const float *)buf)[i];
    if (dt == DT_INT32) return ((const int32_t *)buf)[i];
    return half_to_float(((const uint16_t *)buf)[i]);
}

/* Fills report[R_WRONG..R_EXPECTED]: number of wrong elements and the first one. */
static void check_golden(const void *out, enum dtype dt, int p, int rank, long long count,
                         double *report) {
    double atol = dt == DT_FP32 ? 1e-3 : dt == DT_FP16 ? 2e-2 : 0.0;
    double rtol = atol;
    long long wrong = 0;
    report[R_INDEX] = report[R_VALUE] = report[R_EXPECTED] = 0.0;
    long long n = checks_rank(rank) ? recv_len(count, p) : 0;
    for (long long i = 0; i < n; i++) {
        double e = golden_at(p, count, rank, i);
        double a = element(out, dt, i);
        /* written so that NaN counts as wrong */
        if (!(fabs(a - e) <= atol + rtol * fabs(e))) {
            if (wrong == 0) {
                report[R_INDEX] = (double)i;
                report[R_VALUE] = a;
                report[R_EXPECTED] = e;
            }
            wrong++;
        }
    }
    report[R_WRONG] = (double)wrong;
}

/* ------------------------------------------------------------------------------------------ */
/* Protocol output (rank 0 only)                                                              */
/* ------------------------------------------------------------------------------------------ */

static void print_json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') printf("\\%c", ch);
        else if (ch == '\n') fputs("\\n", stdout);
        else if (ch < 0x20) printf("\\u%04x", ch);
        else putchar(ch);
    }
    putchar('"');
}

static void print_done(int pass) {
    printf("CAMPAIGN_DONE {\"correctness\":\"%s\"", pass ? "pass" : "fail");
    if (!pass) {
        fputs(",\"error\":", stdout);
        print_json_string(g_error);
    }
    fputs("}\n", stdout);
    fflush(stdout);
}

static void print_sample(int timed, long long round, const double *reports, int p,
                         const double *setup_s, int ok) {
    double slowest = 0.0;
    for (int r = 0; r < p; r++)
        if (reports[r * R_FIELDS + R_EXEC] > slowest) slowest = reports[r * R_FIELDS + R_EXEC];
    printf("CAMPAIGN_SAMPLE {\"phase\":\"%s\",\"round\":%lld,\"execute_s\":%.9g,"
           "\"per_rank_execute_s\":[",
           timed ? "timed" : "warmup", round, slowest);
    for (int r = 0; r < p; r++) printf("%s%.9g", r ? "," : "", reports[r * R_FIELDS + R_EXEC]);
    fputs("]", stdout);
    if (setup_s) printf(",\"setup_s\":%.9g", *setup_s);
    int checked = 0;
    for (int r = 0; r < p; r++)
        if (reports[r * R_FIELDS + R_CHECKED] != 0.0) checked = 1;
    printf(",\"ok\":%s,\"checked\":%s}\n", ok ? "true" : "false", checked ? "true" : "false");
    fflush(stdout);
}

/* ------------------------------------------------------------------------------------------ */

/* Bad input: every rank reaches the same verdict (same arguments, same file), so all ranks
 * finalize and exit 2 together; rank 0 says why on stderr and in the protocol. */
static int bad_input(int rank) {
    if (rank == 0) {
        fprintf(stderr, "allreduce_bench: %s\n", g_error);
        print_done(0);
    }
    MPI_Finalize();
    return EXIT_BAD_INPUT;
}

int main(int argc, char **argv) {
    double started = monotonic_s();
    /* The pin must be in the environment before MPI_Init registers the tuned component's
     * parameters; the arguments are read again (and any error reported) after MPI_Init. */
    struct bench_case early = {-1, -1, "", -1, -1, "", "", -1, 0, "", -1, ""};
    int pinned = parse_args(argc, argv, &early) == 0 ? pin_algorithm(&early) : -1;
    g_error[0] = '\0';
    MPI_Init(&argc, &argv);
    int rank = 0, world = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);

    struct bench_case c = {-1, -1, "", -1, -1, "", "", -1, 0, "", -1, ""};
    enum dtype dt = DT_FP32;
    int parsed = parse_args(argc, argv, &c);
    if (parsed == 1) {
        if (rank == 0) usage(stdout);
        MPI_Finalize();
        return EXIT_PASS;
    }
    if (parsed != 0 || validate(&c, world, &dt) != 0) return bad_input(rank);
    if (check_pin(&c, pinned, rank) != 0) return bad_input(rank);

    long long in_n = send_len(c.count, world), out_n = recv_len(c.count, world);
    size_t bytes = (size_t)c.count * elem_bytes(dt);
    void *send = malloc((size_t)in_n * elem_bytes(dt));
    void *recv = malloc((size_t)out_n * elem_bytes(dt));
    /* --check ends: the last round's output buffer (poisoned once, here) */
    void *last = c.check_every ? NULL : malloc((size_t)out_n * elem_bytes(dt));
    long long rounds = c.warmup + c.timed;
    /* Every round's report of this rank; gathered to rank 0 after the last round. */
    double *mine = malloc(sizeof(double) * R_FIELDS * (size_t)rounds);
    double *reports =
        rank == 0 ? malloc(sizeof(double) * R_FIELDS * (size_t)rounds * (size_t)world) : NULL;
    double *row = rank == 0 ? malloc(sizeof(double) * R_FIELDS * (size_t)world) : NULL;
    if (!send || !recv || (!c.check_every && !last) || !mine || (rank == 0 && (!reports || !row))) {
        set_error("rank %d: cannot allocate 2 x %zu bytes", rank, bytes);
        return bad_input(rank);
    }
    fill_input(send, dt, rank, in_n);
    /* MPI_Bcast works in place: the root's buffer is its input, the others' are poisoned. */
    int bcast_root = g_op == OP_BROADCAST && rank == g_root;
    if (bcast_root) fill_input(recv, dt, rank, out_n);
    else poison(recv, dt, out_n);
    if (last) {
        if (bcast_root) fill_input(last, dt, rank, out_n);
        else poison(last, dt, out_n);
    }

    MPI_Datatype type = dt == DT_FP32 ? MPI_FLOAT : dt == DT_INT32 ? MPI_INT32_T : MPI_UINT16_T;
    MPI_Op op = MPI_SUM;
    if (dt == DT_FP16) MPI_Op_create(fp16_sum, 1, &op);

    /* setup_s: MPI_Init + allocation + input fill, slowest rank */
    double my_setup = monotonic_s() - started, setup = 0.0;
    MPI_Reduce(&my_setup, &setup, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    long long failed_rounds = 0, total_wrong = 0, checked_rounds = 0;
    int first_failure_noted = 0;
    for (long long n = 0; n < rounds; n++) {
        double *report = mine + (size_t)n * R_FIELDS;
        int is_last = n == rounds - 1;
        int check = c.check_every || n == 0 || is_last;
        void *out = is_last && last && rounds > 1 ? last : recv;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        switch (g_op) {
        case OP_ALLGATHER:
            MPI_Allgather(send, (int)in_n, type, out, (int)in_n, type, MPI_COMM_WORLD);
            break;
        case OP_REDUCE_SCATTER:
            MPI_Reduce_scatter_block(send, out, (int)out_n, type, op, MPI_COMM_WORLD);
            break;
        case OP_BROADCAST: MPI_Bcast(out, (int)out_n, type, g_root, MPI_COMM_WORLD); break;
        case OP_REDUCE:
            MPI_Reduce(send, out, (int)c.count, type, op, g_root, MPI_COMM_WORLD);
            break;
        case OP_ALLTOALL:
            MPI_Alltoall(send, (int)(c.count / world), type, out, (int)(c.count / world), type,
                         MPI_COMM_WORLD);
            break;
        default: MPI_Allreduce(send, out, (int)c.count, type, op, MPI_COMM_WORLD);
        }
        double t1 = MPI_Wtime();

        report[R_EXEC] = t1 - t0;
        report[R_CHECKED] = check;
        report[R_WRONG] = report[R_INDEX] = report[R_VALUE] = report[R_EXPECTED] = 0.0;
        if (n >= c.warmup && rank == c.fault_rank)
            poison((char *)out + (size_t)(out_n / 2) * elem_bytes(dt), dt, 1);
        if (!check) continue;
        check_golden(out, dt, world, rank, c.count, report);
        if (c.check_every) {
            if (bcast_root) fill_input(recv, dt, rank, out_n);
            else poison(recv, dt, out_n);
        }
    }
    MPI_Gather(mine, (int)(R_FIELDS * rounds), MPI_DOUBLE, reports, (int)(R_FIELDS * rounds),
               MPI_DOUBLE, 0, MPI_COMM_WORLD);

    for (long long n = 0; rank == 0 && n < rounds; n++) {
        int timed = n >= c.warmup;
        long long round = timed ? n - c.warmup + 1 : n + 1;
        /* Rank r's report of round n, laid out as print_sample reads one round. */
        for (int r = 0; r < world; r++)
            memcpy(row + (size_t)r * R_FIELDS,
                   reports + ((size_t)r * (size_t)rounds + (size_t)n) * R_FIELDS,
                   sizeof(double) * R_FIELDS);
        int ok = 1;
        if (row[R_CHECKED] != 0.0) checked_rounds++;
        for (int r = 0; r < world; r++) {
            const double *rr = row + (size_t)r * R_FIELDS;
            if (rr[R_WRONG] == 0.0) continue;
            ok = 0;
            total_wrong += (long long)rr[R_WRONG];
            if (!first_failure_noted) {
                first_failure_noted = 1;
                set_error("golden mismatch in %s round %lld: rank %d has %.0f of %lld elements "
                          "wrong; first at index %.0f: got %.9g, expected %.9g",
                          timed ? "timed" : "warmup", round, r, rr[R_WRONG], out_n,
                          rr[R_INDEX], rr[R_VALUE], rr[R_EXPECTED]);
            }
        }
        if (!ok) failed_rounds++;
        print_sample(timed, round, row, world, n == 0 ? &setup : NULL, ok);
    }

    int pass = failed_rounds == 0;
    MPI_Bcast(&pass, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (!pass) {
            size_t used = strlen(g_error);
            snprintf(g_error + used, sizeof g_error - used,
                     " (%lld of %lld checked rounds failed, %lld wrong elements in all; "
                     "%lld rounds run)",
                     failed_rounds, checked_rounds, total_wrong, rounds);
            fprintf(stderr, "allreduce_bench: %s\n", g_error);
        }
        print_done(pass);
    }

    if (dt == DT_FP16) MPI_Op_free(&op);
    free(send);
    free(recv);
    free(last);
    free(mine);
    free(reports);
    free(row);
    MPI_Finalize();
    return pass ? EXIT_PASS : EXIT_GOLDEN;
}
