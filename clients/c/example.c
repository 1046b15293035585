/* example.c — the C client of `lanes arbiter` in use:
 *   cc -std=c99 -Wall -Wextra -O2 -o example example.c && ./example /run/lanes-arbiter.sock 100
 * Connects, runs N acquire → (work) → release cycles of model "c_example" with batch 4,
 * asks for a device that does not exist (answered REJECT no_such_device), prints the
 * daemon's STATS, and exits 0 when everything went as the protocol says. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "lanes_arbiter.h"

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s SOCKET [CYCLES]\n", argv[0]);
        return 2;
    }
    int cycles = argc > 2 ? atoi(argv[2]) : 10;
    static lanes_arbiter a; /* static: the struct holds a 64 KiB frame buffer */
    if (lanes_arbiter_connect(&a, argv[1], "c-example") != 0) {
        perror("connect");
        return 1;
    }
    printf("session %llu, %u devices:", (unsigned long long)a.session, a.ndevices);
    for (int i = 0; i < a.ndevices && i < LANES_ARBITER_MAX_DEVICES; i++) printf(" %s", a.devices[i]);
    printf("\n");
    uint64_t waited = 0;
    for (int i = 0; i < cycles; i++) {
        lanes_arbiter_grant g;
        int rc = lanes_arbiter_acquire(&a, "c_example", 4, 0, 1000000000u, NULL, 0, &g);
        if (rc != 0) {
            fprintf(stderr, "acquire %d: %d (error %u)\n", i, rc, a.error);
            return 1;
        }
        uint64_t t0 = now_ns();
        /* ... the device work of one batch would run here, on a.devices[g.device] ... */
        waited += g.wait_ns;
        if (lanes_arbiter_release(&a, g.id, now_ns() - t0 + 1) != 0) {
            fprintf(stderr, "release %d failed\n", i);
            return 1;
        }
        if (i == 0) printf("granted %s wait_ns %llu\n", a.devices[g.device], (unsigned long long)g.wait_ns);
    }
    printf("cycles %d, total wait_ns %llu\n", cycles, (unsigned long long)waited);
    uint16_t nowhere = 999;
    lanes_arbiter_grant g;
    int rc = lanes_arbiter_acquire(&a, "c_example", 1, 0, 0, &nowhere, 1, &g);
    printf("device 999: reject reason %d\n", rc);
    if (rc != LANES_ARBITER_NO_SUCH_DEVICE) return 1;
    static char json[65536];
    if (lanes_arbiter_stats(&a, json, sizeof json) != 0) {
        fprintf(stderr, "stats failed\n");
        return 1;
    }
    printf("stats %s\n", json);
    lanes_arbiter_close(&a);
    return 0;
}
