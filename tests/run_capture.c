/* tests/run_capture.c — see run_capture.h. */
#include "run_capture.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int nc_run_capture(const char *const *argv, const char *in_path, char **ret_out)
{
    char tmpl[] = "/tmp/nc-test-out-XXXXXX";
    int out = mkstemp(tmpl);
    if (out < 0)
        return -1;
    unlink(tmpl);
    fflush(stderr);     /* or the child would repeat our buffered log */
    pid_t pid = fork();
    if (pid == 0) {
        int in = open(in_path ? in_path : "/dev/null", O_RDONLY);
        dup2(in, 0);
        dup2(out, 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    off_t len = lseek(out, 0, SEEK_END);
    char *buf = calloc(1, (size_t)(len > 0 ? len : 0) + 1);
    if (buf && len > 0)
        (void)!pread(out, buf, (size_t)len, 0);
    close(out);
    *ret_out = buf;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
