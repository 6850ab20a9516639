/* tests/fuzz/replay_main.c — main() for fuzz targets built without
 * libFuzzer (gcc, or clang without -fsanitize=fuzzer): runs the target once
 * on every file named on the command line, or in the folders named, so
 * the seed corpus is a regression test everywhere (libvips' fuzz/ does the
 * same). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *p = realloc(buf, cap);
            if (!p) {
                free(buf);
                fclose(f);
                return 1;
            }
            buf = p;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        if (n == 0)
            break;
        len += n;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int failed = 0, runs = 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-')
            continue;       /* libFuzzer flags, meaningless here */
        struct stat st;
        if (stat(argv[i], &st)) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            failed |= run_file(argv[i]);
            runs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            /* An unreadable corpus must fail, not replay nothing and pass. */
            perror(argv[i]);
            failed = 1;
            continue;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            failed |= run_file(path);
            runs++;
        }
        closedir(d);
    }
    fprintf(stderr, "replayed %d inputs\n", runs);
    /* An empty or missing corpus tests nothing: say so with a failure. */
    return failed || runs == 0;
}
