#!/usr/bin/python3
"""camera.py — read digit strings from a camera, a video file or image files.

Each frame goes to neocogd as one recognise request with segmentation on
(high priority, so it overtakes bulk work), at most --in-flight frames at a
time, paced at --fps (30 by default; 0: as fast as answers come).  Each
answer is printed in frame order as soon as it is back: the string, then
every character with its box and confidence.  When the daemon falls behind
a live source, a frame that finds the window full is dropped (and counted),
never queued, so the output stays current.

Sources:
  /dev/videoN, or a camera index (0)   V4L2 through OpenCV (python3-opencv)
  a video file (.mp4, .avi, .mjpeg...) through OpenCV
  a folder, or a quoted glob, of .pgm/.png/.jpg files: sent as they are,
                                       in name order; OpenCV not needed

Examples:
  PYTHONPATH=build/clients/python /usr/bin/python3 \\
      clients/python/examples/camera.py --server unix:/run/neocogd/neocogd.sock /dev/video0
  PYTHONPATH=build/clients/python /usr/bin/python3 \\
      clients/python/examples/camera.py --fps 0 'tests/data/photos/line-000*.jpg'
"""

import argparse
import collections
import glob
import os
import sys
import time

import neocog

IMAGE_SUFFIXES = (".pgm", ".png", ".jpg", ".jpeg")


def image_files(source):
    """The image files a folder or glob names, sorted; [] if it names none."""
    if os.path.isdir(source):
        names = [os.path.join(source, n) for n in os.listdir(source)]
    elif any(ch in source for ch in "*?["):
        names = glob.glob(source)
    elif source.lower().endswith(IMAGE_SUFFIXES):
        names = [source]
    else:
        return []
    return sorted(n for n in names if n.lower().endswith(IMAGE_SUFFIXES))


def frames(source):
    """Yield (frame number, image) pairs: encoded bytes for image files,
    BGR numpy arrays from OpenCV for a camera or a video."""
    files = image_files(source)
    if files:
        for n, path in enumerate(files):
            with open(path, "rb") as f:
                yield n, f.read()
        return
    try:
        import cv2
    except ImportError:
        sys.exit("camera.py: %s needs OpenCV (apt-get install python3-opencv); image "
                 "files and folders do not" % source)
    cap = cv2.VideoCapture(int(source) if source.isdigit() else source)
    if not cap.isOpened():
        sys.exit("camera.py: cannot open %s" % source)
    n = 0
    try:
        while True:
            ok, frame = cap.read()
            if not ok:
                return
            yield n, frame
            n += 1
    finally:
        cap.release()


def stamp(future):
    """Runs on the client's I/O thread as the answer arrives: keep it short."""
    future.answered_at = time.monotonic()


def show(n, future, started):
    """Print one frame's answer (or why it has none); latency is from the
    frame's sending to its answer's arrival."""
    try:
        r = future.result()
    except neocog.NeocogError as e:
        print("frame %d: %s" % (n, e), flush=True)
        return False
    # The callback may not have run yet when result() returns.
    ms = (getattr(future, "answered_at", None) or time.monotonic()) - started
    ms *= 1000
    text = r.text.replace("\n", " ")
    print("frame %d: %s  (%d digits, min conf %.3f, %.0f ms)"
          % (n, text or "-", len(r.digits), r.confidence, ms))
    for d in r.digits:
        b = d.box
        why = "  rejected: %s" % d.reject_reason if d.reject else ""
        print("  %s  line %d  %d,%d %dx%d  %.3f%s"
              % (d.text, d.line, b.x, b.y, b.width, b.height, d.confidence, why))
    sys.stdout.flush()
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 2)[2])
    p.add_argument("source", help="/dev/videoN, a camera index, a video file, "
                   "or a folder or glob of image files")
    p.add_argument("--server", default=None,
                   help="daemon address (default: $NEOCOG_SERVER, the default socket, "
                   "tcp:127.0.0.1:5517)")
    p.add_argument("--fps", type=float, default=30.0,
                   help="frames sent per second (default 30; 0: every frame, as fast "
                   "as answers come)")
    p.add_argument("--in-flight", type=int, default=4,
                   help="frames being recognised at once (default 4)")
    p.add_argument("--digits", type=int, default=0, help="characters expected a frame")
    p.add_argument("--roi", default=None, help="X,Y,W,H: look only inside this rectangle")
    p.add_argument("--model", default=None, choices=sorted(neocog.MODELS))
    p.add_argument("--min-conf", type=float, default=0.0,
                   help="minimum confidence (default: the daemon's threshold)")
    p.add_argument("--frames", type=int, default=0, help="stop after N frames (0: all)")
    args = p.parse_args()
    roi = tuple(int(v) for v in args.roi.split(",")) if args.roi else None
    if roi is not None and len(roi) != 4:
        p.error("--roi wants X,Y,W,H")

    options = dict(segment=True, priority=1, model=args.model, roi=roi,
                   expected_digits=args.digits, min_confidence=args.min_conf)
    live = args.fps > 0
    period = 1.0 / args.fps if live else 0.0
    window = collections.deque()        # (frame number, future, sent at)
    sent = answered = dropped = 0
    with neocog.Client(args.server) as client:
        t0 = time.monotonic()
        for n, image in frames(args.source):
            if args.frames and n >= args.frames:
                break
            if live:
                wait = t0 + n * period - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            while window and (window[0][1].done() or len(window) >= args.in_flight and not live):
                answered += show(*window.popleft())
            if len(window) >= args.in_flight:
                dropped += 1            # live: a newer frame is coming anyway
                continue
            future = client.submit(image, **options)
            future.add_done_callback(stamp)
            window.append((n, future, time.monotonic()))
            sent += 1
        while window:
            answered += show(*window.popleft())
    elapsed = time.monotonic() - t0
    print("%d frames sent, %d answered, %d dropped in %.2f s" % (sent, answered, dropped,
                                                                elapsed), file=sys.stderr)
    return 0 if answered == sent else 1


if __name__ == "__main__":
    sys.exit(main())
