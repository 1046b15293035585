/* lanes_arbiter.h — a single-header C99 client of `lanes arbiter` (protocol version 1,
 * docs/arbiter-protocol.md). POSIX; no allocation; one request in flight per connection.
 *
 *   lanes_arbiter a;
 *   if (lanes_arbiter_connect(&a, "/run/lanes-arbiter.sock", "my-service") != 0) ...;
 *   lanes_arbiter_grant g;
 *   int rc = lanes_arbiter_acquire(&a, "line_rnn_zh", 8, 0, 0, NULL, 0, &g);
 *   if (rc == 0) { run on a.devices[g.device]; lanes_arbiter_release(&a, g.id, measured_ns); }
 *   else if (rc > 0) { rejected: rc is the reason, LANES_ARBITER_DEADLINE ... }
 *   lanes_arbiter_close(&a);   (closing also releases everything the connection held)
 *
 * Return values: 0 success; > 0 a REJECT reason (acquire only); -1 an I/O error (errno set);
 * -2 a protocol error (a malformed frame, or the daemon's ERROR message, whose code is kept in
 * a.error). After a negative return the connection is unusable: close it and connect again.
 * Every frame is a 4-byte big-endian length N (1..65536) and N bytes; integers big-endian,
 * strings a u16 length and UTF-8 bytes. */
#ifndef LANES_ARBITER_H
#define LANES_ARBITER_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define LANES_ARBITER_MAX_FRAME 65536
#define LANES_ARBITER_MAX_DEVICES 64 /* names kept; more devices still count in ndevices */
enum { LANES_ARBITER_DEADLINE = 1, LANES_ARBITER_OVERLOAD, LANES_ARBITER_NO_SUCH_DEVICE,
       LANES_ARBITER_BAD_REQUEST, LANES_ARBITER_CANCELLED, LANES_ARBITER_SHUTTING_DOWN };

typedef struct {
    int fd;
    uint64_t next_id, session;
    uint16_t ndevices, error;           /* error: the last ERROR code from the daemon */
    char devices[LANES_ARBITER_MAX_DEVICES][256];
    uint8_t buf[LANES_ARBITER_MAX_FRAME + 4];
    uint32_t len;                       /* body length of the frame in buf */
} lanes_arbiter;

typedef struct { uint64_t id, wait_ns; uint16_t device; } lanes_arbiter_grant;

static uint64_t lanes__get(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}
static uint8_t *lanes__put(uint8_t *p, uint64_t v, int n) {
    for (int i = n - 1; i >= 0; i--) { p[i] = (uint8_t)v; v >>= 8; }
    return p + n;
}
static uint8_t *lanes__str(uint8_t *p, const char *s) {
    size_t n = strlen(s);
    if (n > 255) n = 255;
    p = lanes__put(p, n, 2);
    memcpy(p, s, n);
    return p + n;
}
static int lanes__io(int fd, uint8_t *p, size_t n, int writing) {
    while (n > 0) {
        ssize_t k = writing ? write(fd, p, n) : read(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) { if (k == 0) errno = ECONNRESET; return -1; }
        p += k; n -= (size_t)k;
    }
    return 0;
}
/* Sends the body a->buf[4 .. end). */
static int lanes__send(lanes_arbiter *a, uint8_t *end) {
    uint32_t n = (uint32_t)(end - a->buf - 4);
    lanes__put(a->buf, n, 4);
    return lanes__io(a->fd, a->buf, n + 4, 1);
}
/* Reads one frame into a->buf + 4; returns its type, or a negative error. */
static int lanes__recv(lanes_arbiter *a) {
    if (lanes__io(a->fd, a->buf, 4, 0)) return -1;
    a->len = (uint32_t)lanes__get(a->buf, 4);
    if (a->len < 1 || a->len > LANES_ARBITER_MAX_FRAME) return -2;
    if (lanes__io(a->fd, a->buf + 4, a->len, 0)) return -1;
    if (a->buf[4] == 0x8F) { a->error = a->len >= 3 ? (uint16_t)lanes__get(a->buf + 5, 2) : 0; return -2; }
    return a->buf[4];
}

static int lanes_arbiter_connect(lanes_arbiter *a, const char *path, const char *service) {
    struct sockaddr_un addr;
    memset(a->devices, 0, sizeof a->devices);
    a->next_id = 1; a->ndevices = 0; a->error = 0;
    if (strlen(path) >= sizeof addr.sun_path) { errno = ENAMETOOLONG; return -1; }
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    strcpy(addr.sun_path, path);
    if ((a->fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0) return -1;
    if (connect(a->fd, (struct sockaddr *)&addr, sizeof addr) < 0) { close(a->fd); a->fd = -1; return -1; }
    uint8_t *p = a->buf + 4;
    *p++ = 0x01;
    p = lanes__put(p, 1, 2);
    p = lanes__put(p, (uint64_t)getpid(), 4);
    p = lanes__str(p, service);
    if (lanes__send(a, p)) return -1;
    int t = lanes__recv(a);
    if (t < 0) return t;
    const uint8_t *q = a->buf + 5, *end = a->buf + 4 + a->len;
    if (t != 0x81 || a->len < 13 || lanes__get(q, 2) != 1) return -2;
    a->session = lanes__get(q + 2, 8);
    a->ndevices = (uint16_t)lanes__get(q + 10, 2);
    q += 12;
    for (uint16_t i = 0; i < a->ndevices; i++) {
        if (end - q < 2) return -2;
        size_t n = (size_t)lanes__get(q, 2);
        if ((size_t)(end - q - 2) < n || n > 255) return -2;
        if (i < LANES_ARBITER_MAX_DEVICES) memcpy(a->devices[i], q + 2, n);
        q += 2 + n;
    }
    return q == end ? 0 : -2;
}

/* Waits for a grant of one batch of `model` (cost_ns, timeout_ns: 0 = let the daemon
 * estimate / no deadline; devices: eligible device numbers, ndev 0 = any). */
static int lanes_arbiter_acquire(lanes_arbiter *a, const char *model, uint32_t batch,
                                 uint64_t cost_ns, uint64_t timeout_ns, const uint16_t *devices,
                                 uint16_t ndev, lanes_arbiter_grant *out) {
    uint64_t id = a->next_id++;
    uint8_t *p = a->buf + 4;
    if (ndev > 1000) { errno = EINVAL; return -1; }
    *p++ = 0x02;
    p = lanes__put(p, id, 8);
    p = lanes__str(p, model);
    p = lanes__put(p, batch, 4);
    p = lanes__put(p, cost_ns, 8);
    p = lanes__put(p, timeout_ns, 8);
    p = lanes__put(p, ndev, 2);
    for (uint16_t i = 0; i < ndev; i++) p = lanes__put(p, devices[i], 2);
    if (lanes__send(a, p)) return -1;
    for (;;) { /* skip RELEASED and REVOKED of earlier grants */
        int t = lanes__recv(a);
        if (t < 0) return t;
        const uint8_t *q = a->buf + 5;
        if ((t == 0x82 || t == 0x83) && a->len >= 11 && lanes__get(q, 8) == id) {
            if (t == 0x83) return (int)lanes__get(q + 8, 2);
            if (a->len != 19) return -2;
            out->id = id;
            out->device = (uint16_t)lanes__get(q + 8, 2);
            out->wait_ns = lanes__get(q + 10, 8);
            return 0;
        }
        if (t != 0x84 && t != 0x86) return -2;
    }
}

/* Gives grant `id` back with its measured device time (0 = not measured). */
static int lanes_arbiter_release(lanes_arbiter *a, uint64_t id, uint64_t run_ns) {
    uint8_t *p = a->buf + 4;
    *p++ = 0x03;
    p = lanes__put(p, id, 8);
    p = lanes__put(p, run_ns, 8);
    if (lanes__send(a, p)) return -1;
    for (;;) {
        int t = lanes__recv(a);
        if (t < 0) return t;
        if (t == 0x84 && a->len == 9 && lanes__get(a->buf + 5, 8) == id) return 0;
        if (t != 0x86) return -2;
    }
}

/* Copies the daemon's STATS JSON into `json` (NUL-terminated, cut to fit `cap`). */
static int lanes_arbiter_stats(lanes_arbiter *a, char *json, size_t cap) {
    uint8_t *p = a->buf + 4;
    *p++ = 0x05;
    if (lanes__send(a, p)) return -1;
    int t;
    while ((t = lanes__recv(a)) == 0x86) {}
    if (t < 0) return t;
    if (t != 0x85 || a->len < 5 || lanes__get(a->buf + 5, 4) != a->len - 5 || cap == 0) return -2;
    size_t n = a->len - 5 < cap - 1 ? a->len - 5 : cap - 1;
    memcpy(json, a->buf + 9, n);
    json[n] = '\0';
    return 0;
}

static void lanes_arbiter_close(lanes_arbiter *a) {
    if (a->fd >= 0) close(a->fd);
    a->fd = -1;
}

#endif /* LANES_ARBITER_H */
