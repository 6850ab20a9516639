/* io/opts.h — the command-line programs' one option parser (neocog and the
 * tools): a table of long options gives both the parsing and the --help
 * text, and every program words its errors and exits as neocogd does
 * (daemon/config.c):
 *
 *   PROG: unknown option --bogus (try --help)
 *   PROG: option --out needs a value (try --help)
 *   PROG: bad value for --n: 'x' (try --help)
 *
 * on stderr with exit status 2; --help (and -h) prints the usage on stdout,
 * exit status 0.  Built on getopt_long: --name VALUE and --name=VALUE, an
 * unambiguous abbreviation of a name, operands anywhere among the options
 * (or, with stop_at_operand, options only before the first operand, which
 * is a command word), "--" ends the options.
 *
 * Nothing here exits.  nc_opts_next leaves an error's sentence in why, for
 * a library that reports rather than prints (clients/cli.c); nc_opts_fail
 * prints it the common way and gives the exit status.
 *
 *   static const nc_opt table[] = {
 *       [O_DATA] = { "data", "DIR", "the MNIST folder" },
 *       [O_QUIET] = { "quiet", NULL, "no progress lines" },
 *       [O_COUNT] = { NULL, NULL, NULL },
 *   };
 *   nc_opts p = { .prog = "tool", .usage = "usage: tool --data DIR\n", .table = table };
 *   for (int o; (o = nc_opts_next(&p, argc, argv)) != NC_OPTS_END;) {
 *       if (o == NC_OPTS_HELP) return nc_opts_usage(&p, stdout), 0;
 *       if (o == NC_OPTS_ERROR) return nc_opts_fail(&p);
 *       switch (o) { case O_DATA: data = p.value; break; ... }
 *   }
 *   // operands: argv[p.next .. argc) */
#ifndef NC_OPTS_H
#define NC_OPTS_H

#include <stdint.h>
#include <stdio.h>

/* One long option.  Index it with an enum and designated initializers, so
 * the switch over nc_opts_next's result cannot drift from the table; end
 * the table with a { NULL } entry. */
typedef struct nc_opt {
    const char *name;       /* without the leading "--" */
    const char *value;      /* the value's name in the help ("N", "FILE");
                               NULL: a flag, which takes no value */
    const char *help;       /* what it does; '\n' starts another line;
                               NULL: not listed (an alias, say) */
} nc_opt;

#define NC_OPTS_MAX 64      /* options a table holds at most */

enum {
    NC_OPTS_END = -1,       /* no more options; operands from argv[next] */
    NC_OPTS_HELP = -2,      /* --help or -h */
    NC_OPTS_ERROR = -3,     /* why says what was wrong */
};

typedef struct nc_opts {
    /* the program's */
    const char *prog;       /* the messages' first word: "neocog-photogen" */
    const char *usage;      /* printed first by nc_opts_usage: the synopsis
                               and what the program does, '\n'-terminated */
    const char *notes;      /* printed after the options; NULL: nothing */
    const nc_opt *table;
    int stop_at_operand;    /* options end at the first operand */
    /* nc_opts_next's */
    const char *value;      /* the value of the option just returned */
    int next;               /* after NC_OPTS_END: the first operand */
    char why[256];          /* after NC_OPTS_ERROR: the sentence */
    int started;            /* 0 before the first call (set to 0 again
                               to parse another argv with this table) */
} nc_opts;

/* The next option of argv[1..argc) (argv[0], the program or a command
 * word, is skipped): its index in the table with value set (NULL for a
 * flag), or one of NC_OPTS_END, NC_OPTS_HELP, NC_OPTS_ERROR.  Like
 * getopt_long it permutes argv (operands move behind the options) unless
 * stop_at_operand; argv must be writable. */
int nc_opts_next(nc_opts *p, int argc, char **argv);

/* Print the usage: p->usage, "Options:" with one entry a table row (and
 * -h, --help), then p->notes. */
void nc_opts_usage(const nc_opts *p, FILE *to);

/* Set why to "bad value for --NAME: 'VALUE'" (and hint, when not NULL),
 * for the option just returned; returns NC_OPTS_ERROR. */
int nc_opts_bad_value(nc_opts *p, int opt, const char *hint);

/* Set why from a format (a usage error that is not one option's); returns
 * NC_OPTS_ERROR. */
int nc_opts_error(nc_opts *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "PROG: WHY (try --help)" on stderr; returns 2, the usage exit
 * status. */
int nc_opts_fail(const nc_opts *p);

/* A value that is a whole decimal number in lo..hi: digits only (no sign,
 * no spaces, nothing after them).  0 and *ret, or -1 with *ret untouched. */
int nc_opts_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *ret);

#endif
