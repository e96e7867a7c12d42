#!/usr/bin/python3
"""Opens a `kiln report` page in headless Chromium (Debian's `chromium`) and checks what it
rendered: the screenshot is a PNG that is not blank and shows the first two series colours
(the chart lines were drawn), and the DOM Chromium built has each expected chart series with
data-points and as many x,y pairs as logged values.

    chromium_check.py page.html shot.png 'epoch_loss/train=3' 'epoch_loss/validation=3' ...

Exit 0: all checks pass; 1: a check failed (printed); 77: no chromium here (ctest's skip).
"""
import html.parser
import shutil
import struct
import subprocess
import sys
import zlib

SERIES_COLOURS = [(0x1F, 0x77, 0xB4), (0xFF, 0x7F, 0x0E)]  # svg_chart.cpp's kColors[0..1]


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_chromium(binary, args, page):
    # --no-sandbox: CI and the fresh-machine check run as root, where the sandbox refuses.
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--window-size=1400,2200", *args, "file://" + page]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"{path}: unexpected PNG format depth={depth} colour={colour}")
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):  # undo the row filter (PNG spec, 9.2)
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


class ChartParser(html.parser.HTMLParser):
    """'chart/series' -> (data-points, number of x,y pairs in points) for every polyline."""

    def __init__(self):
        super().__init__()
        self.chart, self.series = None, {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and "data-chart" in a:
            self.chart = a["data-chart"]
        if tag == "polyline" and "series" in a.get("class", "").split():
            pairs = [p for p in a.get("points", "").split() if "," in p]
            self.series[f"{self.chart}/{a['data-series']}"] = (int(a["data-points"]), len(pairs))


def main(argv):
    page, shot, expected = argv[1], argv[2], dict(e.rsplit("=", 1) for e in argv[3:])
    binary = chromium()
    if not binary:
        print("chromium is not installed (apt-get install chromium; scripts/install_deps.sh --test)")
        return 77
    problems = []
    r = run_chromium(binary, [f"--screenshot={shot}"], page)
    try:
        width, height, rows = png_pixels(shot)
        colours = {px for row in rows for px in row}
        print(f"screenshot {shot}: {width}x{height}, {len(colours)} distinct colours")
        if len(colours) < 8:
            problems.append(f"the screenshot is blank ({len(colours)} colours)")
        for c in SERIES_COLOURS:
            if c not in colours:
                problems.append(f"no pixel of the series colour #{c[0]:02x}{c[1]:02x}{c[2]:02x}: no chart line drawn")
    except (OSError, ValueError, TypeError) as e:
        problems.append(f"no usable screenshot ({e}); chromium said: {r.stderr[-2000:]}")
    r = run_chromium(binary, ["--dump-dom"], page)
    parser = ChartParser()
    parser.feed(r.stdout)
    print(f"DOM: {len(parser.series)} series: " + ", ".join(f"{k}={v[0]}" for k, v in sorted(parser.series.items())))
    for key, count in expected.items():
        got = parser.series.get(key)
        if got is None:
            problems.append(f"the rendered DOM has no series {key}")
        elif got != (int(count), int(count)):
            problems.append(f"{key}: data-points {got[0]}, {got[1]} x,y pairs; expected {count}")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
