/* tests/clients/test_unit.c — the pure parts of the clients: server
 * addresses, command-line parsing, image sniffing, TSV/JSON escaping and
 * the latency histogram's percentile maths.  No daemon, no sockets. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "neocog_client.h"
#include "test.h"

static void test_addr(void)
{
    nc_client_addr a;
    CHECK_INT_EQ(nc_client_addr_parse("unix:/run/x.sock", &a), 0);
    CHECK_INT_EQ(a.kind, NC_CLIENT_ADDR_UNIX);
    CHECK(!strcmp(a.path, "/run/x.sock"));
    CHECK_INT_EQ(nc_client_addr_parse("./rel/s.sock", &a), 0);
    CHECK_INT_EQ(a.kind, NC_CLIENT_ADDR_UNIX);
    CHECK_INT_EQ(nc_client_addr_parse("tcp:127.0.0.1:6000", &a), 0);
    CHECK_INT_EQ(a.kind, NC_CLIENT_ADDR_TCP);
    CHECK(!strcmp(a.host, "127.0.0.1"));
    CHECK_INT_EQ(a.port, 6000);
    CHECK_INT_EQ(nc_client_addr_parse("localhost:7", &a), 0);
    CHECK(!strcmp(a.host, "localhost"));
    CHECK_INT_EQ(a.port, 7);
    CHECK_INT_EQ(nc_client_addr_parse("tcp:example.org", &a), 0);
    CHECK_INT_EQ(a.port, 5517);
    CHECK_INT_EQ(nc_client_addr_parse("[::1]:5517", &a), 0);
    CHECK(!strcmp(a.host, "::1"));
    CHECK_INT_EQ(a.port, 5517);
    CHECK_INT_EQ(nc_client_addr_parse("tcp:[fe80::1]", &a), 0);
    CHECK(!strcmp(a.host, "fe80::1"));
    /* Refused: empty, no port digits, port out of range, bare IPv6,
     * unclosed bracket, junk after it, an empty path. */
    const char *bad[] = { "", "tcp:", "host:", "host:0", "host:65536", "host:12x",
                          "host:-1", "::1", "[::1", "[::1]x", "unix:", ":5517" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_MSG(nc_client_addr_parse(bad[i], &a) == -EINVAL, "'%s' accepted", bad[i]);
    char longpath[300];
    memset(longpath, 'a', sizeof longpath - 1);
    longpath[0] = '/';
    longpath[sizeof longpath - 1] = '\0';
    CHECK_INT_EQ(nc_client_addr_parse(longpath, &a), -EINVAL);
}

/* Parse a command line given as one string (split on spaces). */
static int parse(const char *line, nc_cli_args *a, char *why, size_t n)
{
    static char buf[1024];
    static char *argv[64];
    snprintf(buf, sizeof buf, "neocog %s", line);
    int argc = 0;
    for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " "))
        argv[argc++] = t;
    argv[argc] = NULL;
    return nc_cli_parse(argc, argv, a, why, n);
}

static void test_args(void)
{
    nc_cli_args a;
    char why[256];
    CHECK_INT_EQ(parse("--server unix:/s recognize --model cnn --top 3 --format tsv "
                       "--segment a.pgm - b.png", &a, why, sizeof why), 0);
    CHECK_INT_EQ(a.cmd, NC_CLI_CMD_RECOGNIZE);
    CHECK(a.server && !strcmp(a.server, "unix:/s"));
    CHECK_INT_EQ(a.model, NEOCOG__MODEL__MODEL_CNN);
    CHECK_INT_EQ(a.top_k, 3);
    CHECK_INT_EQ(a.format, NC_CLI_FORMAT_TSV);
    CHECK_INT_EQ(a.segment, 1);
    REQUIRE(a.n_files == 3);
    CHECK(!strcmp(a.files[0], "a.pgm") && !strcmp(a.files[1], "-") &&
          !strcmp(a.files[2], "b.png"));
    /* Options may follow the files, and --server may follow the command. */
    CHECK_INT_EQ(parse("recognize x.jpg --format json --server tcp:h:1", &a, why, sizeof why), 0);
    CHECK_INT_EQ(a.format, NC_CLI_FORMAT_JSON);
    CHECK(a.server && !strcmp(a.server, "tcp:h:1"));
    CHECK_INT_EQ(a.n_files, 1);

    CHECK_INT_EQ(parse("bench --idx t.gz", &a, why, sizeof why), 0);
    CHECK_INT_EQ(a.cmd, NC_CLI_CMD_BENCH);
    CHECK_INT_EQ(a.concurrency, 8);             /* defaults */
    CHECK_NEAR(a.duration_s, 10.0, 0, 0);
    CHECK_INT_EQ(a.batch_images, 1);
    CHECK_INT_EQ(parse("bench --rate 250.5 --requests 1000 --batch-images 16 --dir d",
                       &a, why, sizeof why), 0);
    CHECK_NEAR(a.rate, 250.5, 0, 0);
    CHECK_INT_EQ(a.concurrency, 0);
    CHECK_INT_EQ(a.requests, 1000);
    CHECK_NEAR(a.duration_s, 0.0, 0, 0);        /* --requests alone bounds the run */
    CHECK_INT_EQ(a.batch_images, 16);
    CHECK_INT_EQ(parse("bench --idx t.gz --priority background", &a, why, sizeof why), 0);
    CHECK_INT_EQ(a.priority, -1);
    CHECK_INT_EQ(parse("recognize --priority 7 a", &a, why, sizeof why), 0);
    CHECK_INT_EQ(a.priority, 7);
    CHECK_INT_EQ(parse("recognize a", &a, why, sizeof why), 0);
    CHECK_INT_EQ(a.priority, 0);                /* normal unless asked */
    CHECK_INT_EQ(parse("status --format json", &a, why, sizeof why), 0);
    CHECK_INT_EQ(a.cmd, NC_CLI_CMD_STATUS);
    CHECK_INT_EQ(parse("--help", &a, why, sizeof why), 0);
    CHECK_INT_EQ(a.cmd, NC_CLI_CMD_HELP);
    CHECK_INT_EQ(a.help_cmd, NC_CLI_CMD_HELP);
    CHECK_INT_EQ(parse("bench -h", &a, why, sizeof why), 0);
    CHECK_INT_EQ(a.cmd, NC_CLI_CMD_HELP);
    CHECK_INT_EQ(a.help_cmd, NC_CLI_CMD_BENCH);     /* the command's own help */
    CHECK_INT_EQ(parse("recognize --help", &a, why, sizeof why), 0);
    CHECK_INT_EQ(a.help_cmd, NC_CLI_CMD_RECOGNIZE);
    CHECK_INT_EQ(parse("status --help", &a, why, sizeof why), 0);
    CHECK_INT_EQ(a.help_cmd, NC_CLI_CMD_STATUS);
    CHECK_INT_EQ(parse("help recognize", &a, why, sizeof why), 0);
    CHECK_INT_EQ(a.help_cmd, NC_CLI_CMD_RECOGNIZE);
    CHECK_INT_EQ(parse("help camera", &a, why, sizeof why), 0);
    CHECK_INT_EQ(a.help_cmd, NC_CLI_CMD_CAMERA);
    CHECK_INT_EQ(parse("help", &a, why, sizeof why), 0);
    CHECK_INT_EQ(a.help_cmd, NC_CLI_CMD_HELP);
    /* --min-conf: the request's minimum confidence; 0 asks for none */
    CHECK_INT_EQ(parse("recognize a", &a, why, sizeof why), 0);
    CHECK(a.min_confidence == 0.0f);            /* the server's threshold */
    CHECK_INT_EQ(parse("recognize --min-conf 0.25 a", &a, why, sizeof why), 0);
    CHECK(a.min_confidence == 0.25f);
    CHECK_INT_EQ(parse("recognize --min-conf 0 a", &a, why, sizeof why), 0);
    CHECK(a.min_confidence < 0.0f);
    CHECK_INT_EQ(parse("bench --idx t.gz --min-conf 0.9", &a, why, sizeof why), 0);
    CHECK(a.min_confidence == 0.9f);
    CHECK_INT_EQ(parse("--version", &a, why, sizeof why), 0);
    CHECK_INT_EQ(a.cmd, NC_CLI_CMD_VERSION);

    /* Usage errors, each with a sentence. */
    const char *bad[] = {
        "", "frobnicate", "recognize", "recognize - -", "recognize --top 0 a",
        "recognize --top x a", "recognize --model lenet a", "recognize --format xml a",
        "recognize --rate 5 a", "recognize --bogus a", "recognize a --top",
        "status extra", "status --format tsv", "bench", "bench --idx a --dir b",
        "bench --idx a --rate 5 --concurrency 2", "bench --dir d --labels l",
        "bench --idx a --duration 0", "bench --idx a --rate -1", "bench --idx a --rate nan",
        "bench --idx a --concurrency 1x", "--timeout 0 status", "--top 3 recognize a",
        "recognize --priority urgent a", "recognize --priority 1001 a",
        "recognize --priority -- a", "status --priority high",
        "recognize --min-conf 1.5 a", "recognize --min-conf -0.1 a",
        "recognize --min-conf x a", "status --min-conf 0.5", "help frobnicate",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = '\0';
        CHECK_MSG(parse(bad[i], &a, why, sizeof why) == -EINVAL, "'%s' accepted", bad[i]);
        CHECK_MSG(why[0] != '\0', "'%s': no reason given", bad[i]);
    }
    CHECK_INT_EQ(parse("recognize --model lenet a", &a, why, sizeof why), -EINVAL);
    CHECK(strstr(why, "lenet") != NULL);
    /* `neocog` alone names every command, camera too */
    CHECK_INT_EQ(parse("", &a, why, sizeof why), -EINVAL);
    CHECK_MSG(strstr(why, "recognize") && strstr(why, "status") && strstr(why, "bench") &&
              strstr(why, "camera"), "no command: '%s'", why);

    uint64_t u;
    double d;
    CHECK_INT_EQ(nc_cli_parse_u64("18446744073709551615", 0, UINT64_MAX, &u), 0);
    CHECK(u == UINT64_MAX);
    CHECK_INT_EQ(nc_cli_parse_u64("18446744073709551616", 0, UINT64_MAX, &u), -EINVAL);
    CHECK_INT_EQ(nc_cli_parse_u64(" 5", 0, 10, &u), -EINVAL);
    CHECK_INT_EQ(nc_cli_parse_double("1e3", 0, 1e4, &d), 0);
    CHECK_NEAR(d, 1000, 0, 0);
    CHECK_INT_EQ(nc_cli_parse_double("inf", 0, 1e4, &d), -EINVAL);
    int32_t p;
    CHECK_INT_EQ(nc_cli_parse_priority("high", &p), 0);
    CHECK_INT_EQ(p, 1);
    CHECK_INT_EQ(nc_cli_parse_priority("normal", &p), 0);
    CHECK_INT_EQ(p, 0);
    CHECK_INT_EQ(nc_cli_parse_priority("-1000", &p), 0);
    CHECK_INT_EQ(p, -1000);
    CHECK_INT_EQ(nc_cli_parse_priority("-1001", &p), -EINVAL);
    CHECK_INT_EQ(nc_cli_parse_priority("--1", &p), -EINVAL);
    CHECK_INT_EQ(nc_cli_parse_priority("", &p), -EINVAL);
}

static void test_sniff(void)
{
    nc_cli_image_kind k;
    uint32_t w, h;
    const char *pgm = "P5\n# made by hand\n84 42\n255\n";
    CHECK_INT_EQ(nc_cli_sniff_image((const uint8_t *)pgm, strlen(pgm), &k, &w, &h), 0);
    CHECK_INT_EQ(k, NC_CLI_IMAGE_PGM);
    CHECK_INT_EQ(w, 84);
    CHECK_INT_EQ(h, 42);
    /* P2 (ASCII) is not what the daemon takes; a header cut short is bad. */
    CHECK_INT_EQ(nc_cli_sniff_image((const uint8_t *)"P2\n1 1\n", 7, &k, &w, &h), -EBADMSG);
    CHECK_INT_EQ(nc_cli_sniff_image((const uint8_t *)"P5\n84", 5, &k, &w, &h), -EBADMSG);

    uint8_t png[33] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13,
                        'I', 'H', 'D', 'R', 0, 0, 1, 0x2c, 0, 0, 0, 0x1c, 8, 0 };
    CHECK_INT_EQ(nc_cli_sniff_image(png, sizeof png, &k, &w, &h), 0);
    CHECK_INT_EQ(k, NC_CLI_IMAGE_PNG);
    CHECK_INT_EQ(w, 300);
    CHECK_INT_EQ(h, 28);
    CHECK_INT_EQ(nc_cli_sniff_image(png, 20, &k, &w, &h), -EBADMSG);

    /* SOI, an APP0 segment to skip, a fill byte, then SOF2 (progressive). */
    uint8_t jpg[] = { 0xff, 0xd8, 0xff, 0xe0, 0, 6, 'J', 'F', 'I', 'F', 0xff, 0xff, 0xc2,
                      0, 11, 8, 0, 29, 0, 57, 1, 1, 0x11, 0 };
    CHECK_INT_EQ(nc_cli_sniff_image(jpg, sizeof jpg, &k, &w, &h), 0);
    CHECK_INT_EQ(k, NC_CLI_IMAGE_JPEG);
    CHECK_INT_EQ(w, 57);
    CHECK_INT_EQ(h, 29);
    /* DHT (c4) is no frame header; a scan before any frame is corrupt. */
    uint8_t jpg_bad[] = { 0xff, 0xd8, 0xff, 0xc4, 0, 2, 0xff, 0xda, 0, 2 };
    CHECK_INT_EQ(nc_cli_sniff_image(jpg_bad, sizeof jpg_bad, &k, &w, &h), -EBADMSG);
    CHECK_INT_EQ(nc_cli_sniff_image(jpg, 12, &k, &w, &h), -EBADMSG);
    CHECK_INT_EQ(nc_cli_sniff_image((const uint8_t *)"GIF89a", 6, &k, &w, &h), -EBADMSG);
    CHECK_INT_EQ(nc_cli_sniff_image((const uint8_t *)"", 0, &k, &w, &h), -EBADMSG);
}

/* Run fn into a memory stream and compare with want. */
static void check_out(void (*fn)(FILE *, const char *), const char *in, const char *want)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    REQUIRE(f);
    fn(f, in);
    fclose(f);
    CHECK_MSG(!strcmp(buf, want), "in '%s': got '%s', want '%s'", in ? in : "(null)", buf, want);
    free(buf);
}

static void test_escape(void)
{
    check_out(nc_cli_tsv_field, "7", "7");
    check_out(nc_cli_tsv_field, "a\tb\nc\\d\re", "a\\tb\\nc\\\\d\\re");
    check_out(nc_cli_tsv_field, "", "");
    check_out(nc_json_string, "plain", "\"plain\"");
    check_out(nc_json_string, "q\"b\\s/", "\"q\\\"b\\\\s/\"");
    check_out(nc_json_string, "\n\t\r\b\f\x01\x1f\x7f", "\"\\n\\t\\r\\b\\f\\u0001\\u001f\\u007f\"");
    check_out(nc_json_string, "d\xc3\xa9j\xc3\xa0", "\"d\xc3\xa9j\xc3\xa0\"");   /* UTF-8 as is */
    check_out(nc_json_string, NULL, "null");

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    REQUIRE(f);
    nc_json_number(f, 0.5);
    fputc(' ', f);
    nc_json_number(f, 42);
    fputc(' ', f);
    nc_json_number(f, NAN);
    fputc(' ', f);
    nc_json_number(f, -INFINITY);
    fputc('|', f);
    nc_cli_tsv_header(f);
    nc_cli_tsv_row(f, 5, 2, 1, 1, 1, 1, 3, 4, 20, 30, 97.5, "7\t", NULL, 0);
    nc_cli_tsv_row(f, 1, 2, 0, 0, 0, 0, 0, 0, 84, 84, -1, "", NULL, -1);
    nc_cli_tsv_row(f, 5, 1, 1, 1, 2, 1, 0, 0, 9, 9, 41.25, "?", "below threshold", 90);
    fclose(f);
    CHECK_MSG(!strcmp(buf, "0.5 42 null null|"
                           "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\t"
                           "left\ttop\twidth\theight\tconf\ttext\treject\tthreshold\n"
                           "5\t2\t1\t1\t1\t1\t3\t4\t20\t30\t97.500000\t7\\t\t\t0.000000\n"
                           "1\t2\t0\t0\t0\t0\t0\t0\t84\t84\t-1\t\t\t-1\n"
                           "5\t1\t1\t1\t2\t1\t0\t0\t9\t9\t41.250000\t?\tbelow threshold\t"
                           "90.000000\n"), "got '%s'", buf);
    free(buf);
}

static void test_hist(void)
{
    static nc_hist h, g;
    nc_hist_init(&h);
    CHECK_INT_EQ(nc_hist_percentile(&h, 50), 0);
    /* 1..1000: exact buckets, so nearest rank is exact. */
    for (uint64_t v = 1000; v >= 1; v--)
        nc_hist_record(&h, v);
    CHECK_INT_EQ(nc_hist_percentile(&h, 50), 500);
    CHECK_INT_EQ(nc_hist_percentile(&h, 90), 900);
    CHECK_INT_EQ(nc_hist_percentile(&h, 99), 990);
    CHECK_INT_EQ(nc_hist_percentile(&h, 99.9), 999);
    CHECK_INT_EQ(nc_hist_percentile(&h, 100), 1000);
    CHECK_INT_EQ(nc_hist_percentile(&h, 0.01), 1);
    CHECK_NEAR(nc_hist_mean(&h), 500.5, 1e-9, 0);
    /* One sample: every percentile is it. */
    nc_hist_init(&g);
    nc_hist_record(&g, 123456789);
    CHECK_INT_EQ(nc_hist_percentile(&g, 50), 123456789);    /* clamped to min = max */
    CHECK_INT_EQ(nc_hist_percentile(&g, 99.9), 123456789);
    /* A long tail: 999 fast, 1 slow; p99.9 is still fast, p100 the slow one. */
    nc_hist_init(&g);
    for (int i = 0; i < 999; i++)
        nc_hist_record(&g, 100000);
    nc_hist_record(&g, 50000000);
    CHECK_NEAR(nc_hist_percentile(&g, 99.9), 100000, 0, 0.002);
    CHECK_INT_EQ(nc_hist_percentile(&g, 100), 50000000);
    /* Merge: the same as recording everything in one. */
    nc_hist_merge(&h, &g);
    CHECK_INT_EQ(h.count, 2000);
    CHECK_INT_EQ(h.min, 1);
    CHECK_INT_EQ(h.max, 50000000);
    CHECK_INT_EQ(nc_hist_percentile(&h, 50), 1000);
    /* Buckets tile the whole range: every value lies in its bucket, which
     * is at most 0.2 % wide relative to its values. */
    nc_test_rng rng = { 0x9e3779b97f4a7c15ULL };
    size_t prev_b = 0;
    for (int i = 0; i < 100000; i++) {
        uint64_t v = nc_test_next(&rng) >> (nc_test_next(&rng) % 64);
        size_t b = nc_hist_bucket_of(v);
        CHECK_MSG(b < NC_HIST_BUCKETS, "bucket %zu of %llu", b, (unsigned long long)v);
        if (b >= NC_HIST_BUCKETS)
            break;
        uint64_t lo = nc_hist_bucket_low(b), hi = nc_hist_bucket_high(b);
        CHECK_MSG(lo <= v && v <= hi, "%llu not in [%llu, %llu]", (unsigned long long)v,
                  (unsigned long long)lo, (unsigned long long)hi);
        CHECK_MSG((double)(hi - lo) <= 0.002 * (double)lo + 1e-9 || hi < 1024,
                  "bucket %zu too wide", b);
        (void)prev_b;
    }
    CHECK_INT_EQ(nc_hist_bucket_of(UINT64_MAX), NC_HIST_BUCKETS - 1);
    CHECK(nc_hist_bucket_high(NC_HIST_BUCKETS - 1) == UINT64_MAX);
    for (size_t b = 0; b + 1 < NC_HIST_BUCKETS; b++)
        if (nc_hist_bucket_high(b) + 1 != nc_hist_bucket_low(b + 1)) {
            CHECK_MSG(0, "gap after bucket %zu", b);
            break;
        }
}

/* A command's help holds its own options and not the others'; the global
 * help every command's. */
static void test_usage(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    REQUIRE(f);
    nc_cli_usage_command(f, NC_CLI_CMD_RECOGNIZE);
    fclose(f);
    CHECK_MSG(strstr(buf, "recognize [OPTIONS]") && strstr(buf, "--min-conf") &&
              !strstr(buf, "--concurrency") && !strstr(buf, "bench ["), "recognize help: %s",
              buf);
    free(buf);
    f = open_memstream(&buf, &len);
    REQUIRE(f);
    nc_cli_usage(f);
    fclose(f);
    CHECK(strstr(buf, "  recognize ") && strstr(buf, "  status ") && strstr(buf, "  bench ") &&
          strstr(buf, "  camera "));
    free(buf);
}

/* Digit d of a segmented result on line `line`, box at x, y. */
static Neocog__Digit *mk_digit(Neocog__Digit *d, Neocog__Box *b, uint32_t line, uint32_t x,
                               uint32_t y, const char *text, float conf, int reason)
{
    neocog__digit__init(d);
    neocog__box__init(b);
    b->x = x;
    b->y = y;
    b->width = 10;
    b->height = 20;
    d->box = b;
    d->line = line;
    d->text = (char *)text;
    d->confidence = conf;
    d->reject = reason != 0;
    d->reject_reason = (Neocog__RejectReason)reason;
    return d;
}

static void test_lines(void)
{
    Neocog__Digit d[5];
    Neocog__Box b[5];
    Neocog__Digit *dv[5] = {
        mk_digit(&d[0], &b[0], 0, 5, 3, "4", 0.9f, 0),
        mk_digit(&d[1], &b[1], 0, 17, 1, "0", 0.8f, 0),
        mk_digit(&d[2], &b[2], 0, 29, 4, "2", 0.95f, 0),
        mk_digit(&d[3], &b[3], 1, 6, 40, "?", 0.3f,
                 NEOCOG__REJECT_REASON__REJECT_BELOW_THRESHOLD),
        mk_digit(&d[4], &b[4], 1, 18, 42, "8", 0.7f, 0),
    };
    Neocog__Result res = NEOCOG__RESULT__INIT;
    res.digits = dv;
    res.n_digits = 5;
    nc_result_line lines[4];
    REQUIRE(nc_result_lines(&res, lines, 4) == 2);
    CHECK(lines[0].first == 0 && lines[0].count == 3);
    CHECK(lines[0].x0 == 5 && lines[0].y0 == 1 && lines[0].x1 == 39 && lines[0].y1 == 24);
    CHECK_NEAR(lines[0].confidence, 0.8, 1e-6, 0);
    CHECK(!lines[0].reject && lines[0].reject_reason == NEOCOG__REJECT_REASON__REJECT_NONE);
    CHECK(lines[1].first == 3 && lines[1].count == 2);
    CHECK(lines[1].x0 == 6 && lines[1].y0 == 40 && lines[1].x1 == 28 && lines[1].y1 == 62);
    CHECK(lines[1].reject &&
          lines[1].reject_reason == NEOCOG__REJECT_REASON__REJECT_BELOW_THRESHOLD);
    char text[8];
    nc_result_line_text(&res, &lines[0], text, sizeof text);
    CHECK(!strcmp(text, "402"));
    nc_result_line_text(&res, &lines[1], text, sizeof text);
    CHECK(!strcmp(text, "?8"));
    nc_result_line_text(&res, &lines[0], text, 3);     /* cut to fit */
    CHECK(!strcmp(text, "40"));
    /* only cap lines written, all counted */
    CHECK_INT_EQ(nc_result_lines(&res, lines, 1), 2);
    CHECK(lines[0].count == 3);
    res.n_digits = 0;
    CHECK_INT_EQ(nc_result_lines(&res, lines, 4), 0);
    CHECK(!strcmp(nc_client_reject_reason_text(NEOCOG__REJECT_REASON__REJECT_NO_INK),
                  "no ink"));
    CHECK(!strcmp(nc_client_reject_reason_text(NEOCOG__REJECT_REASON__REJECT_NONE), ""));
}

/* nc_json_number writes what printf's %.0f (whole numbers) or %.9g writes,
 * without printf on the way: floats spread over the whole range, both
 * signs, and doubles of every exponent. */
static void test_json_number(void)
{
    char got[64], want[64];
    long differ = 0;
    uint64_t x = 88172645463325252u;
    for (uint32_t i = 0; i < 400000; i++) {
        double v;
        if (i < 200000) {
            uint32_t w = (i * 10711u) % 0x7f800000u;        /* float bit patterns */
            float f;
            memcpy(&f, &w, sizeof f);
            v = i & 1 ? -(double)f : (double)f;
        } else {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;         /* random doubles */
            memcpy(&v, &x, sizeof v);
            if (!isfinite(v))
                continue;
        }
        FILE *f = fmemopen(got, sizeof got, "w");
        REQUIRE(f);
        nc_json_number(f, v);
        fputc('\0', f);
        fclose(f);
        snprintf(want, sizeof want, v == floor(v) && fabs(v) < 1e15 ? "%.0f" : "%.9g", v);
        if (strcmp(got, want) && differ++ < 5)
            CHECK_MSG(0, "%a: wrote %s, printf %s", v, got, want);
    }
    CHECK_INT_EQ(differ, 0);
}

int main(void)
{
    test_addr();
    test_args();
    test_sniff();
    test_escape();
    test_json_number();
    test_hist();
    test_usage();
    test_lines();
    return nc_test_finish();
}
