/* tests/io/test_opts.c — io/opts.h: values, flags and operands as the
 * programs get them, every usage error's sentence, and the usage text made
 * from the table. */
#include "opts.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

enum { O_DATA, O_COUNT, O_CONCURRENCY, O_CONNECTIONS, O_QUIET, O_END };

static const nc_opt table[] = {
    [O_DATA] = { "data", "DIR", "where the data is" },
    [O_COUNT] = { "count", "N", "how many\nat most" },
    [O_CONCURRENCY] = { "concurrency", "C", "requests in flight" },
    [O_CONNECTIONS] = { "connections", "C", NULL },
    [O_QUIET] = { "quiet", NULL, "say less" },
    [O_END] = { NULL, NULL, NULL },
};

/* Split line into a writable argv (argv[0] "prog"); the words live in buf. */
static int split(const char *line, char *buf, size_t n, char **argv, int max)
{
    snprintf(buf, n, "prog %s", line);
    int argc = 0;
    for (char *w = strtok(buf, " "); w && argc < max - 1; w = strtok(NULL, " "))
        argv[argc++] = w;
    argv[argc] = NULL;
    return argc;
}

/* Parse line; the options seen as "index=value" joined by ';', then the
 * operands after '|', or the error's sentence after '!'. */
static void run(const char *line, int stop_at_operand, char *out, size_t n)
{
    char buf[256], *argv[32];
    int argc = split(line, buf, sizeof buf, argv, 32);
    nc_opts p = { .prog = "prog", .table = table, .stop_at_operand = stop_at_operand };
    out[0] = '\0';
    size_t at = 0;
    for (int o; (o = nc_opts_next(&p, argc, argv)) != NC_OPTS_END;) {
        if (o == NC_OPTS_ERROR) {
            snprintf(out, n, "!%s", p.why);
            return;
        }
        at += (size_t)snprintf(out + at, n - at, "%d=%s;", o, p.value ? p.value : "");
    }
    at += (size_t)snprintf(out + at, n - at, "|");
    for (int i = p.next; i < argc; i++)
        at += (size_t)snprintf(out + at, n - at, "%s ", argv[i]);
}

static void expect(const char *line, int stop, const char *want)
{
    char got[512];
    run(line, stop, got, sizeof got);
    CHECK_MSG(!strcmp(got, want), "'%s': got '%s', want '%s'", line, got, want);
}

static void test_parse(void)
{
    expect("--data d --quiet --count=3", 0, "0=d;4=;1=3;|");
    expect("a --data d b -- --quiet", 0, "0=d;|a b --quiet ");
    expect("--data -x", 0, "0=-x;|");                 /* a value may start with '-' */
    expect("--conc 4 --da d", 0, "2=4;0=d;|");        /* unambiguous abbreviations */
    expect("--quiet cmd --data d", 1, "4=;|cmd --data d ");
    expect("--bogus 1", 0, "!unknown option --bogus");
    expect("--bogus=1", 0, "!unknown option --bogus");
    expect("-x", 0, "!unknown option -x");
    expect("--data", 0, "!option --data needs a value");
    expect("--quiet=1", 0, "!option --quiet takes no value");
    expect("--con 1", 0, "!option --con is ambiguous");
    expect("--help=1", 0, "!option --help takes no value");

    char buf[64], *argv[8];
    int argc = split("x -h", buf, sizeof buf, argv, 8);
    nc_opts p = { .prog = "prog", .table = table };
    CHECK_INT_EQ(nc_opts_next(&p, argc, argv), NC_OPTS_HELP);
    argc = split("--count x", buf, sizeof buf, argv, 8);
    p = (nc_opts){ .prog = "prog", .table = table };
    CHECK_INT_EQ(nc_opts_next(&p, argc, argv), O_COUNT);
    CHECK_INT_EQ(nc_opts_bad_value(&p, O_COUNT, "(a number)"), NC_OPTS_ERROR);
    CHECK_MSG(!strcmp(p.why, "bad value for --count: 'x' (a number)"), "%s", p.why);
}

/* The usage: the program's text, each listed option with its value's name
 * and help in a column as wide as the widest listed label (continuation
 * lines under it), --help, the notes; an option without help is left out. */
static void test_usage(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    REQUIRE(f != NULL);
    nc_opts p = { .prog = "prog", .usage = "usage: prog [OPTIONS]\n", .notes = "Exit 2.\n",
                  .table = table };
    nc_opts_usage(&p, f);
    fclose(f);
    const char *want =
        "usage: prog [OPTIONS]\n"
        "\n"
        "Options:\n"
        "  --data DIR       where the data is\n"
        "  --count N        how many\n"
        "                   at most\n"
        "  --concurrency C  requests in flight\n"
        "  --quiet          say less\n"
        "  -h, --help       this text\n"
        "Exit 2.\n";
    CHECK_MSG(!strcmp(text, want), "usage:\n%s", text);
    free(text);
}

/* nc_opts_u32: digits only, inside the range, and a refusal leaves the
 * number as it was. */
static void test_u32(void)
{
    uint32_t v = 7;
    CHECK(nc_opts_u32("0", 0, 10, &v) == 0 && v == 0);
    CHECK(nc_opts_u32("10", 0, 10, &v) == 0 && v == 10);
    CHECK(nc_opts_u32("007", 1, 10, &v) == 0 && v == 7);
    CHECK(nc_opts_u32("4294967295", 0, UINT32_MAX, &v) == 0 && v == UINT32_MAX);
    v = 5;
    static const char *const bad[] = { "", "11", "4294967296", "99999999999999999999", "-1",
                                       "+1", " 1", "1 ", "1x", "0x10", "1.0" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK_MSG(nc_opts_u32(bad[i], 0, 10, &v) == -1 && v == 5, "'%s' taken", bad[i]);
    CHECK(nc_opts_u32("0", 1, 10, &v) == -1 && v == 5);
    CHECK(nc_opts_u32(NULL, 0, 10, &v) == -1 && v == 5);
}

int main(void)
{
    test_parse();
    test_u32();
    test_usage();
    return nc_test_finish();
}
