/*
 * fsin-roi-mark: marks the region of interest of a shell command on the
 * guests of `fsin qemu --roi marker` (fsin_roi.h):
 *
 *   fsin-roi-mark begin            the region begins (waits for the go)
 *   fsin-roi-mark end              the region ends
 *   fsin-roi-mark begin RANK SIZE  as rank RANK of SIZE processes that
 *   fsin-roi-mark end RANK SIZE    all mark it (the region begins when
 *                                  every one has)
 *
 * Exit status 2 for anything else. Built by scripts/install-qemu.sh into
 * the MPI image's /usr/local/bin.
 */
#include <errno.h>

#include "fsin_roi.h"

/* `s` as a number below 2^32, or -1. */
static long long number(const char *s) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *s == '\0' || *s == '-' || *end != '\0' || v > 0xffffffffull)
        return -1;
    return (long long)v;
}

int main(int argc, char **argv) {
    long long rank = 0, size = 1;
    if (argc == 4) {
        rank = number(argv[2]);
        size = number(argv[3]);
    }
    int begin = argc > 1 && !strcmp(argv[1], "begin");
    int end = argc > 1 && !strcmp(argv[1], "end");
    if ((argc != 2 && argc != 4) || !(begin || end) || rank < 0 || size < 1 || rank >= size) {
        fprintf(stderr, "usage: fsin-roi-mark begin|end [RANK SIZE] (RANK below SIZE)\n");
        return 2;
    }
    fsin_roi_mark(begin ? FSIN_ROI_MARKER : FSIN_ROI_END, (uint32_t)rank, (uint32_t)size);
    return 0;
}
