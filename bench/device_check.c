/*
 * device_check.c - is one OpenCL device right? For machines where the
 * Check suites cannot be built (bench/gpu-check.sh runs it on lent GPUs).
 *
 * Owns: hashing, on the OpenCL backend with the given device spec, with
 * verification off and no CPU fallback (so a wrong digest from the device
 * reaches this check instead of being repaired): the NIST CAVP SHA-1
 * short and long message vectors (as one batch and one by one), the first
 * checkpoints of the Monte Carlo chain (one message per call), and a
 * random differential against OpenSSL (many lengths, a few messages
 * longer than one staging buffer). Also checks that every byte was hashed
 * on the device. Must not: trust anything but the NIST files and OpenSSL.
 *
 * Usage: hb_device_check DEVICE_SPEC CAVP_DIR [RANDOM_MESSAGES] [SEED]
 * Prints one JSON object on stdout; exit 0 if all matched, 1 if not or on
 * an error, 2 on bad arguments.
 */
#include <hashbatch.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VECTORS 256
#define MAX_MSG_BYTES 8192
#define MONTE_CHECKPOINTS 10

typedef struct {
    uint8_t *msg;
    size_t len;
    uint8_t md[20];
} vector;

typedef struct {
    vector v[MAX_VECTORS];
    size_t n;
    uint8_t seed[20]; /* Monte Carlo */
} rsp;

static hb_engine *engine;
static int failures;

/* unhex: hex digits into out (cap bytes); returns the byte count or -1. */
static long unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = strcspn(s, "\r\n \t");
    if (n % 2 != 0 || n / 2 > cap)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (uint8_t)v;
    }
    return (long)(n / 2);
}

/* load: the vectors (Len/Msg/MD) or Monte checkpoints (Seed, MD) of a
 * .rsp file. Returns 0, or -1 after printing why. */
static int load(const char *path, rsp *r)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        perror(path);
        return -1;
    }
    memset(r, 0, sizeof *r);
    char line[2 * MAX_MSG_BYTES + 64];
    size_t bits = 0;
    int bad = 0;
    while (!bad && fgets(line, sizeof line, f) != NULL) {
        if (sscanf(line, "Len = %zu", &bits) == 1)
            continue;
        if (strncmp(line, "Seed = ", 7) == 0) {
            bad = unhex(line + 7, r->seed, 20) != 20;
        } else if (strncmp(line, "Msg = ", 6) == 0 && r->n < MAX_VECTORS) {
            vector *v = &r->v[r->n];
            v->len = bits / 8;
            v->msg = malloc(v->len + 1);
            bad = v->msg == NULL ||
                  (v->len > 0 && unhex(line + 6, v->msg, MAX_MSG_BYTES) != (long)v->len);
        } else if (strncmp(line, "MD = ", 5) == 0 && r->n < MAX_VECTORS) {
            bad = unhex(line + 5, r->v[r->n].md, 20) != 20;
            r->n++;
        }
    }
    fclose(f);
    if (bad || r->n == 0) {
        fprintf(stderr, "hb_device_check: cannot parse %s\n", path);
        return -1;
    }
    return 0;
}

/* oracle: OpenSSL's SHA-1 through EVP. */
static void oracle(const void *data, size_t len, uint8_t out[20])
{
    unsigned n = 20;
    EVP_Digest(data, len, out, &n, EVP_sha1(), NULL);
}

static int batch(const hb_msg *m, size_t n, hb_digest *out)
{
    hb_status st = hb_sha1_batch(engine, m, n, out);
    if (st != HB_OK) {
        fprintf(stderr, "hb_device_check: hb_sha1_batch: %s: %s\n", hb_status_str(st),
                hb_engine_last_error(engine));
        failures++;
        return -1;
    }
    return 0;
}

/* vectors: a file's vectors as one batch and one at a time; returns
 * the number of wrong digests. */
static size_t vectors(const rsp *r, const char *what)
{
    hb_msg m[MAX_VECTORS];
    hb_digest got[MAX_VECTORS], one;
    size_t wrong = 0;
    for (size_t i = 0; i < r->n; i++)
        m[i] = (hb_msg){r->v[i].msg, r->v[i].len};
    if (batch(m, r->n, got) != 0)
        return r->n;
    for (size_t i = 0; i < r->n; i++) {
        int bad = memcmp(got[i], r->v[i].md, 20) != 0;
        if (batch(&m[i], 1, &one) != 0 || memcmp(one, r->v[i].md, 20) != 0)
            bad = 1;
        if (bad) {
            fprintf(stderr, "hb_device_check: %s vector %zu (%zu bytes) wrong\n", what, i,
                    r->v[i].len);
            wrong++;
        }
    }
    return wrong;
}

/* monte: the first checkpoints of the SHAVS Monte Carlo chain, one
 * 60-byte message per call; returns the number of wrong checkpoints. */
static size_t monte(const rsp *r)
{
    uint8_t seed[20], md[1003][20];
    size_t wrong = 0;
    memcpy(seed, r->seed, 20);
    for (size_t j = 0; j < MONTE_CHECKPOINTS && j < r->n; j++) {
        memcpy(md[0], seed, 20);
        memcpy(md[1], seed, 20);
        memcpy(md[2], seed, 20);
        for (size_t i = 3; i <= 1002; i++) {
            uint8_t m[60];
            memcpy(m, md[i - 3], 20);
            memcpy(m + 20, md[i - 2], 20);
            memcpy(m + 40, md[i - 1], 20);
            hb_msg msg = {m, sizeof m};
            if (batch(&msg, 1, &md[i]) != 0)
                return MONTE_CHECKPOINTS;
        }
        if (memcmp(md[1002], r->v[j].md, 20) != 0) {
            fprintf(stderr, "hb_device_check: Monte checkpoint %zu wrong\n", j);
            wrong++;
        }
        memcpy(seed, md[1002], 20);
    }
    return wrong;
}

static uint64_t rng(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1du;
}

/* random_length: mostly short, some a few KiB, a few up to 128 KiB. */
static size_t random_length(uint64_t *s)
{
    uint64_t r = rng(s) % 100;
    if (r < 70)
        return (size_t)(rng(s) % 300);
    if (r < 98)
        return (size_t)(rng(s) % 8192);
    return (size_t)(rng(s) % (128 << 10));
}

typedef struct {
    size_t messages, bytes, wrong;
} random_result;

/* differential: n random messages plus three longer than a staging
 * buffer, against OpenSSL. */
static random_result differential(size_t n, uint64_t seed)
{
    random_result res = {0, 0, 0};
    static const size_t big[] = {(size_t)40 << 20, ((size_t)40 << 20) + 3, ((size_t)17 << 20) + 61};
    size_t total = n + sizeof big / sizeof big[0];
    size_t *len = malloc(total * sizeof *len);
    hb_msg *m = malloc(total * sizeof *m);
    hb_digest *got = malloc(total * sizeof *got);
    uint64_t s = seed | 1;
    size_t bytes = 0;
    for (size_t i = 0; len != NULL && i < total; i++) {
        len[i] = i < n ? random_length(&s) : big[i - n];
        bytes += len[i];
    }
    uint8_t *data = malloc(bytes + 8);
    if (len == NULL || m == NULL || got == NULL || data == NULL) {
        fprintf(stderr, "hb_device_check: out of memory\n");
        res.wrong = 1;
        failures++;
        goto out;
    }
    for (size_t i = 0; i < bytes; i += 8) {
        uint64_t v = rng(&s);
        memcpy(data + i, &v, 8);
    }
    for (size_t i = 0, off = 0; i < total; off += len[i], i++)
        m[i] = (hb_msg){data + off, len[i]};
    if (batch(m, total, got) != 0) {
        res.wrong = total;
        goto out;
    }
    for (size_t i = 0; i < total; i++) {
        uint8_t want[20];
        oracle(m[i].data, m[i].len, want);
        if (memcmp(want, got[i], 20) != 0 && res.wrong++ < 5)
            fprintf(stderr, "hb_device_check: random message %zu (%zu bytes) wrong\n", i,
                    m[i].len);
    }
    res.messages = total;
    res.bytes = bytes;
out:
    free(data);
    free(got);
    free(m);
    free(len);
    return res;
}

/* put_json_string: s as a JSON string literal (ASCII control characters,
 * quotes and backslashes escaped). */
static void put_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static int open_engine(const char *spec)
{
    hb_config cfg;
    hb_config_init(&cfg);
    cfg.backend = HB_BACKEND_OPENCL;
    cfg.device = spec;
    cfg.verify = HB_VERIFY_OFF;
    cfg.cpu_fallback = 0;
    cfg.use_environment = 0;
    hb_status st = hb_engine_open(&engine, &cfg);
    if (st != HB_OK) {
        fprintf(stderr, "hb_device_check: cannot open device '%s': %s: %s\n", spec,
                hb_status_str(st), hb_engine_last_error(NULL));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: hb_device_check DEVICE_SPEC CAVP_DIR [RANDOM_MESSAGES] [SEED]\n");
        return 2;
    }
    size_t n = argc > 3 ? strtoull(argv[3], NULL, 10) : 100000;
    uint64_t seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 20261130;
    static rsp shortmsg, longmsg, montemsg;
    char path[4096];
    snprintf(path, sizeof path, "%s/SHA1ShortMsg.rsp", argv[2]);
    int bad = load(path, &shortmsg);
    snprintf(path, sizeof path, "%s/SHA1LongMsg.rsp", argv[2]);
    bad |= load(path, &longmsg);
    snprintf(path, sizeof path, "%s/SHA1Monte.rsp", argv[2]);
    bad |= load(path, &montemsg);
    if (bad || open_engine(argv[1]) != 0)
        return 1;
    size_t wrong_short = vectors(&shortmsg, "ShortMsg");
    size_t wrong_long = vectors(&longmsg, "LongMsg");
    size_t wrong_monte = monte(&montemsg);
    random_result rr = differential(n, seed);
    hb_stats st;
    hb_engine_stats(engine, &st);
    int all_on_device = st.device_bytes == st.bytes && st.fallbacks == 0 && st.device_errors == 0;
    int ok = failures == 0 && wrong_short == 0 && wrong_long == 0 && wrong_monte == 0 &&
             rr.wrong == 0 && all_on_device;
    printf("{\"engine\": ");
    put_json_string(hb_engine_describe(engine));
    printf(", \"verify\": \"off\", \"cpu_fallback\": false,\n"
           " \"cavp_short\": {\"vectors\": %zu, \"wrong\": %zu},\n"
           " \"cavp_long\": {\"vectors\": %zu, \"wrong\": %zu},\n"
           " \"monte\": {\"checkpoints\": %d, \"wrong\": %zu},\n"
           " \"random\": {\"messages\": %zu, \"bytes\": %zu, \"seed\": %" PRIu64
           ", \"wrong\": %zu},\n"
           " \"engine_bytes\": %" PRIu64 ", \"device_bytes\": %" PRIu64
           ", \"device_errors\": %" PRIu64 ", \"all_on_device\": %s, \"ok\": %s}\n",
           shortmsg.n, wrong_short, longmsg.n, wrong_long,
           MONTE_CHECKPOINTS, wrong_monte, rr.messages, rr.bytes, seed, rr.wrong, st.bytes,
           st.device_bytes, st.device_errors, all_on_device ? "true" : "false",
           ok ? "true" : "false");
    hb_engine_close(engine);
    return ok ? 0 : 1;
}
