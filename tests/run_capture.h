/* tests/run_capture.h — run a program and capture its standard output, for
 * the tests that drive the real command-line tools (clients, camera). */
#ifndef NC_TEST_RUN_CAPTURE_H
#define NC_TEST_RUN_CAPTURE_H

/* Run argv (argv[0] a path) with stdin from in_path (NULL: /dev/null) and
 * stdout captured into a malloc'd, NUL-terminated string (*ret_out; stderr
 * passes through, for the test log).  Returns the exit status, -1 if it did
 * not exit normally or could not start. */
int nc_run_capture(const char *const *argv, const char *in_path, char **ret_out);

#endif
