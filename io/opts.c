/* io/opts.c — see opts.h. */
#include "opts.h"

#include <getopt.h>
#include <stdarg.h>
#include <string.h>

/* getopt_long's codes for the table's entries: above every short option. */
#define OPT_BASE 256

/* The widest option column before the help moves under it. */
#define USAGE_COLUMN_MAX 24

static const char *help_label = "-h, --help";

int nc_opts_error(nc_opts *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, sizeof p->why, fmt, ap);
    va_end(ap);
    return NC_OPTS_ERROR;
}

int nc_opts_bad_value(nc_opts *p, int opt, const char *hint)
{
    return nc_opts_error(p, "bad value for --%s: '%s'%s%s", p->table[opt].name,
                         p->value ? p->value : "", hint ? " " : "", hint ? hint : "");
}

int nc_opts_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *ret)
{
    uint64_t v = 0;
    if (!s || !*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > hi)
            return -1;
    }
    if (v < lo)
        return -1;
    *ret = (uint32_t)v;
    return 0;
}

int nc_opts_fail(const nc_opts *p)
{
    fprintf(stderr, "%s: %s (try --help)\n", p->prog, p->why);
    return 2;
}

/* The name an unknown or ambiguous long option was given as: arg without
 * its dashes and without "=value". */
static void given_name(const char *arg, char *dst, size_t n)
{
    while (*arg == '-')
        arg++;
    size_t len = strcspn(arg, "=");
    if (len >= n)
        len = n - 1;
    memcpy(dst, arg, len);
    dst[len] = '\0';
}

/* How many names of the table (and "help") start with name. */
static int prefix_matches(const nc_opts *p, const char *name)
{
    size_t len = strlen(name);
    int n = !strncmp("help", name, len);
    for (const nc_opt *o = p->table; o->name; o++)
        n += !strncmp(o->name, name, len);
    return n;
}

int nc_opts_next(nc_opts *p, int argc, char **argv)
{
    struct option lo[NC_OPTS_MAX + 2];
    int n = 0;
    for (; p->table[n].name; n++) {
        if (n == NC_OPTS_MAX)
            return nc_opts_error(p, "more than %d options in %s's table", NC_OPTS_MAX,
                                 p->prog);
        lo[n] = (struct option){ p->table[n].name,
                                 p->table[n].value ? required_argument : no_argument, NULL,
                                 OPT_BASE + n };
    }
    lo[n] = (struct option){ "help", no_argument, NULL, 'h' };
    lo[n + 1] = (struct option){ NULL, 0, NULL, 0 };
    if (!p->started) {
        optind = 0;             /* glibc: 0 starts over fully (a second argv) */
        p->started = 1;
    }
    opterr = 0;                 /* the errors are worded here */
    p->value = NULL;
    p->why[0] = '\0';
    /* ':' first: a missing value comes back as ':', apart from '?' */
    const int c = getopt_long(argc, argv, p->stop_at_operand ? "+:h" : ":h", lo, NULL);
    if (c == -1) {
        p->next = optind;
        return NC_OPTS_END;
    }
    if (c == 'h')
        return NC_OPTS_HELP;
    const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
    if (c == ':')
        return optopt >= OPT_BASE && optopt < OPT_BASE + n
            ? nc_opts_error(p, "option --%s needs a value", p->table[optopt - OPT_BASE].name)
            : nc_opts_error(p, "option -%c needs a value", optopt);
    if (c == '?') {
        char name[64];
        if (optopt >= OPT_BASE && optopt < OPT_BASE + n)
            return nc_opts_error(p, "option --%s takes no value",
                                 p->table[optopt - OPT_BASE].name);
        if (optopt == 'h')
            return nc_opts_error(p, "option --help takes no value");
        if (optopt)
            return nc_opts_error(p, "unknown option -%c", optopt);
        given_name(arg, name, sizeof name);
        if (prefix_matches(p, name) > 1)
            return nc_opts_error(p, "option --%s is ambiguous", name);
        return nc_opts_error(p, "unknown option --%s", name);
    }
    p->value = optarg;
    return c - OPT_BASE;
}

/* "--name VALUE" as the usage shows it. */
static size_t label_of(const nc_opt *o, char *dst, size_t n)
{
    int w = snprintf(dst, n, "--%s%s%s", o->name, o->value ? " " : "", o->value ? o->value : "");
    return w > 0 ? (size_t)w : 0;
}

static void print_entry(FILE *to, const char *label, size_t label_len, int column,
                        const char *help)
{
    fprintf(to, "  %s", label);
    int at = 2 + (int)label_len;
    for (const char *line = help; line;) {
        const char *end = strchr(line, '\n');
        const int len = end ? (int)(end - line) : (int)strlen(line);
        if (at > column + 2) {      /* a label too wide: help on the next line */
            fputc('\n', to);
            at = 0;
        }
        fprintf(to, "%*s%.*s\n", column + 4 - at, "", len, line);
        at = 0;
        line = end && end[1] ? end + 1 : NULL;
    }
}

void nc_opts_usage(const nc_opts *p, FILE *to)
{
    char label[128];
    int column = (int)strlen(help_label);
    for (const nc_opt *o = p->table; o->name; o++) {
        const int w = (int)label_of(o, label, sizeof label);
        if (o->help && w > column && w <= USAGE_COLUMN_MAX)
            column = w;
    }
    if (p->usage)
        fputs(p->usage, to);
    fputs("\nOptions:\n", to);
    for (const nc_opt *o = p->table; o->name; o++)
        if (o->help)
            print_entry(to, label, label_of(o, label, sizeof label), column, o->help);
    print_entry(to, help_label, strlen(help_label), column, "this text");
    if (p->notes)
        fputs(p->notes, to);
}
