/* clients/camera.h — `neocog camera`: real-time digit strings from a camera
 * stream through neocogd.
 *
 * Layer: clients.  Frames come from camera_input.c; each is one
 * recognise request with segment set (JPEG frames sent as they came, other
 * frames as raw grey), one request in flight at a time, each answer
 * flushed to stdout as it comes.  A reader thread fills a one-slot
 * mailbox.  Every frame is answered, the reader waiting for the daemon,
 * unless the source is live (a V4L2 device, --fps, or --live for a pipe
 * from a camera): then, when recognition falls behind, the newest frame
 * replaces the waiting one and the replaced one counts as dropped.
 * Usage: `neocog camera --help`. */
#ifndef NC_CAMERA_H
#define NC_CAMERA_H

/* Where the command word "camera" sits in argv, after the global options
 * (--server, --timeout), or -1 when the command is another one. */
int nc_camera_command_index(int argc, char **argv);

/* Run `neocog [GLOBAL] camera [OPTIONS] [SOURCE]`; argv[cmd] is "camera".
 * Returns the exit status: 0 the stream was read to its end (or stopped by
 * SIGINT/SIGTERM) with the daemon answering, 1 the daemon or the source
 * failed, 2 usage. */
int nc_camera_main(int argc, char **argv, int cmd);

#endif
