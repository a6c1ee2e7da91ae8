// A streaming HTTP/1.1 load client for live overload runs, in C so that it costs the machine
// little next to the gateway it measures: on two shared cores a Node client reading thousands of
// token streams is itself the bottleneck, and its lateness shows up as the gateway's.
//
// One thread, epoll, non-blocking sockets, keep-alive. Each request POSTs a body to
// /v1/chat/completions — BODY_FILE's, or with several (BODY_FILE,BODY_FILE,…) the k-th request
// the (k mod count)-th's, with any `@@@@@@@@@@` in it replaced by k in ten digits (a prompt no
// cache has seen) — and is timed as its client sees it: time to first token from the moment
// it was due to be sent, the gaps between reads that carried a token (`"content":"` followed by
// a non-empty string, in the de-chunked body), whether the stream ended with `data: [DONE]` and
// no `"error"`, and for a refusal the error code and Retry-After.
//
//   stream-client HOST PORT BODY_FILE[,BODY_FILE…] OUT_FILE open SCHEDULE_FILE
//       open loop: one request at each time of SCHEDULE_FILE (ms from the start, one per line,
//       ascending; all 0 for a burst), on an idle keep-alive connection when there is one and on
//       a new connection otherwise, whatever happened to the others;
//   stream-client HOST PORT BODY_FILE[,BODY_FILE…] OUT_FILE closed CONNECTIONS DURATION_S
//       closed loop: CONNECTIONS connections, each sending its next request when its last
//       answer ends, for DURATION_S seconds; requests in flight then are waited for.
//
// OUT_FILE gets one tab-separated line per request, in the order they ended:
//   due_ms status ttft_ms gap_p99_ms gap_max_ms tokens completed reused latency_ms
//   request_id code retry_after_s connect_ms body
// status 0 is a connection that failed before a status line; ttft_ms is -1 without a token;
// gap_p99_ms is numpy's linear-interpolation 99th percentile of the gaps (0 without any);
// request_id, code and retry_after_s are - when absent; connect_ms is how long a new
// connection took to be established, from when the request was due (-1 on one already open);
// body is which of the bodies it POSTed, from 0. Build: gcc -O2 -o stream-client stream-client.c
// (bench/c-client.ts does, once per source change).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void die(const char *what) {
  perror(what);
  exit(2);
}

// ---- A streaming substring matcher (Knuth–Morris–Pratt), so a pattern split across two reads
// or two chunks is still found.
#define MAX_PAT 16
typedef struct {
  const char *pat;
  int len;
  int fail[MAX_PAT];
} pattern_t;

static void pattern_init(pattern_t *p, const char *pat) {
  p->pat = pat;
  p->len = (int)strlen(pat);
  p->fail[0] = 0;
  for (int i = 1, k = 0; i < p->len; i++) {
    while (k > 0 && pat[i] != pat[k]) k = p->fail[k - 1];
    if (pat[i] == pat[k]) k++;
    p->fail[i] = k;
  }
}

// Advances state `*k` (characters matched) by `c`; true when the whole pattern has just matched.
static int pattern_step(const pattern_t *p, int *k, char c) {
  while (*k > 0 && c != p->pat[*k]) *k = p->fail[*k - 1];
  if (c == p->pat[*k]) (*k)++;
  if (*k == p->len) {
    *k = p->fail[*k - 1];
    return 1;
  }
  return 0;
}

static pattern_t CONTENT, DONE, ERROR, CODE;

// ---- Requests and their outcomes.
typedef struct {
  double due;  // absolute ms, when it was to be sent
  int status;
  double ttft;  // -1 until the first token
  double last_token;
  double *gaps;
  int ngaps, capgaps;
  long tokens;
  int saw_done, saw_error;
  int reused;
  double connected;  // when its new connection was established; -1 on one already open
  char request_id[80];
  char code[48];
  double retry_after;  // -1 when absent
  int body;  // which of the bodies it POSTs
  char *bytes;  // its own request, numbered, when its body has the marker; else NULL
} request_t;

// ---- Connections and their response parser.
enum conn_state { C_CONNECTING, C_SENDING, C_HEADERS, C_BODY, C_IDLE, C_CLOSED };
enum body_kind { B_CHUNKED, B_LENGTH, B_TO_CLOSE };
enum chunk_state { K_SIZE, K_SIZE_EXT, K_SIZE_LF, K_DATA, K_DATA_CR, K_DATA_LF, K_TRAILER };

typedef struct conn {
  int fd;
  enum conn_state state;
  request_t *req;  // the request in flight, or NULL
  size_t sent;
  int served;  // requests answered on this connection so far
  char head[8192];
  size_t headlen;
  enum body_kind body;
  long remaining;  // B_LENGTH: bytes left; chunked: bytes left of the chunk
  enum chunk_state chunk;
  int trailer_nl;  // K_TRAILER: consecutive line ends seen
  int keep_alive;
  int k_content, k_done, k_error, k_code;  // matcher states
  int content_tail;  // 1: `"content":"` just matched, the next byte decides
  int code_copy;  // copying the error code's characters
  size_t code_len;
  struct conn *next_idle;
} conn_t;

static const char *host;
static int port;
// Each body's whole request (head and body), and how many there are; requests made so far.
#define MAX_BODIES 16
static char *request_bytes[MAX_BODIES];
static size_t request_len[MAX_BODIES];
static int nbodies;
static long requests_made;
// Where each body's request has the marker a request's number replaces; -1: none.
#define MARKER "@@@@@@@@@@"
#define MARKER_LEN 10
static long marker_at[MAX_BODIES];
static FILE *out;
static int ep;
static conn_t *idle_list;
static long in_flight;
static double start_ms;
// Closed loop: until when requests are sent, and connections the server closed that are to be
// replaced (opened from the main loop, not from inside the close).
static int closed_mode;
static double closed_until;
static long reopen;

static void record(request_t *r, double end) {
  double p99 = 0, max = 0;
  if (r->ngaps > 0) {
    // numpy's default (linear) percentile over the sorted gaps.
    int n = r->ngaps;
    for (int i = 1; i < n; i++) {  // insertion sort: a stream has at most a few hundred gaps
      double g = r->gaps[i];
      int j = i - 1;
      while (j >= 0 && r->gaps[j] > g) {
        r->gaps[j + 1] = r->gaps[j];
        j--;
      }
      r->gaps[j + 1] = g;
    }
    double pos = 0.99 * (n - 1);
    int lo = (int)pos;
    int hi = lo + 1 < n ? lo + 1 : lo;
    p99 = r->gaps[lo] + (r->gaps[hi] - r->gaps[lo]) * (pos - lo);
    max = r->gaps[n - 1];
  }
  int completed = r->status == 200 && r->saw_done && !r->saw_error;
  char retry[32] = "-";
  if (r->retry_after >= 0) snprintf(retry, sizeof retry, "%g", r->retry_after);
  fprintf(out, "%.3f\t%d\t%.3f\t%.3f\t%.3f\t%ld\t%d\t%d\t%.3f\t%s\t%s\t%s\t%.3f\t%d\n",
          r->due - start_ms, r->status, r->ttft < 0 ? -1 : r->ttft, p99, max, r->tokens, completed,
          r->reused, end - r->due, r->request_id[0] ? r->request_id : "-",
          r->code[0] ? r->code : "-", retry, r->connected < 0 ? -1 : r->connected - r->due,
          r->body);
  free(r->gaps);
  free(r->bytes);
  free(r);
  in_flight--;
}

static request_t *new_request(double due) {
  request_t *r = calloc(1, sizeof *r);
  if (r == NULL) die("calloc");
  r->due = due;
  r->ttft = -1;
  r->retry_after = -1;
  r->connected = -1;
  long k = requests_made++;
  r->body = (int)(k % nbodies);
  if (marker_at[r->body] >= 0) {
    r->bytes = malloc(request_len[r->body]);
    if (r->bytes == NULL) die("malloc");
    memcpy(r->bytes, request_bytes[r->body], request_len[r->body]);
    char digits[24];
    snprintf(digits, sizeof digits, "%0*lu", MARKER_LEN, (unsigned long)k % 10000000000UL);
    memcpy(r->bytes + marker_at[r->body], digits, MARKER_LEN);
  }
  in_flight++;
  return r;
}

static void watch(conn_t *c, uint32_t events, int op) {
  struct epoll_event ev = {.events = events, .data.ptr = c};
  if (epoll_ctl(ep, op, c->fd, &ev) < 0) die("epoll_ctl");
}

static void reset_parser(conn_t *c) {
  c->headlen = 0;
  c->k_content = c->k_done = c->k_error = c->k_code = 0;
  c->content_tail = 0;
  c->code_copy = 0;
  c->code_len = 0;
  c->trailer_nl = 0;
}

static conn_t *open_conn(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
    fprintf(stderr, "stream-client: HOST must be an IPv4 address, got %s\n", host);
    exit(2);
  }
  conn_t *c = calloc(1, sizeof *c);
  if (c == NULL) die("calloc");
  c->fd = fd;
  c->state = C_CONNECTING;
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) {
    c->state = C_CLOSED;  // reported by the caller's first write
  }
  watch(c, EPOLLOUT | EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
  return c;
}

// Ends the connection: a request still on it ends with what it got (status 0 before a status
// line, a cut stream after one).
static void close_conn(conn_t *c, double t) {
  if (c->req != NULL) record(c->req, t);
  c->req = NULL;
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  c->state = C_CLOSED;
  for (conn_t **p = &idle_list; *p != NULL; p = &(*p)->next_idle) {
    if (*p == c) {
      *p = c->next_idle;
      break;
    }
  }
  free(c);
  if (closed_mode && t < closed_until) reopen++;
}

static void try_send(conn_t *c, double t) {
  const char *bytes = c->req->bytes != NULL ? c->req->bytes : request_bytes[c->req->body];
  size_t len = request_len[c->req->body];
  while (c->sent < len) {
    ssize_t n = send(c->fd, bytes + c->sent, len - c->sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN) {
        watch(c, EPOLLOUT | EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
        return;
      }
      close_conn(c, t);
      return;
    }
    c->sent += (size_t)n;
  }
  c->state = C_HEADERS;
  watch(c, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
}

static void start_request(conn_t *c, request_t *r, double t) {
  c->req = r;
  c->sent = 0;
  reset_parser(c);
  r->reused = c->served > 0 || c->state == C_IDLE;
  if (c->state == C_CONNECTING) return;  // sent once connected
  c->state = C_SENDING;
  try_send(c, t);
}

static const char *header_value(const char *head, const char *name) {
  size_t n = strlen(name);
  for (const char *line = strstr(head, "\r\n"); line != NULL; line = strstr(line + 2, "\r\n")) {
    if (strncasecmp(line + 2, name, n) == 0 && line[2 + n] == ':') {
      const char *v = line + 3 + n;
      while (*v == ' ') v++;
      return v;
    }
  }
  return NULL;
}

static void copy_token(char *dst, size_t cap, const char *v) {
  size_t i = 0;
  while (v[i] != '\r' && v[i] != '\n' && v[i] != '\0' && i + 1 < cap) {
    dst[i] = v[i];
    i++;
  }
  dst[i] = '\0';
}

// Parses the status line and headers; false when they are malformed.
static int parse_head(conn_t *c) {
  c->head[c->headlen] = '\0';
  request_t *r = c->req;
  if (sscanf(c->head, "HTTP/1.%*d %d", &r->status) != 1) return 0;
  const char *v;
  if ((v = header_value(c->head, "x-goodput-request-id")) != NULL)
    copy_token(r->request_id, sizeof r->request_id, v);
  if ((v = header_value(c->head, "retry-after")) != NULL) r->retry_after = atof(v);
  c->keep_alive = 1;
  if ((v = header_value(c->head, "connection")) != NULL && strncasecmp(v, "close", 5) == 0)
    c->keep_alive = 0;
  if ((v = header_value(c->head, "transfer-encoding")) != NULL &&
      strncasecmp(v, "chunked", 7) == 0) {
    c->body = B_CHUNKED;
    c->chunk = K_SIZE;
    c->remaining = 0;
  } else if ((v = header_value(c->head, "content-length")) != NULL) {
    c->body = B_LENGTH;
    c->remaining = atol(v);
  } else {
    c->body = B_TO_CLOSE;
    c->keep_alive = 0;
  }
  return 1;
}

// Body bytes, de-chunked: token chunks for a 200, the error code for a refusal.
static long scan_body(conn_t *c, const char *p, size_t n) {
  request_t *r = c->req;
  long tokens = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = p[i];
    if (r->status == 200) {
      if (c->content_tail) {
        c->content_tail = 0;
        if (ch != '"') tokens++;
      }
      if (pattern_step(&CONTENT, &c->k_content, ch)) c->content_tail = 1;
      if (pattern_step(&DONE, &c->k_done, ch)) r->saw_done = 1;
      if (pattern_step(&ERROR, &c->k_error, ch)) r->saw_error = 1;
    } else if (r->code[0] == '\0' || c->code_copy) {
      if (c->code_copy) {
        if (ch == '"' || c->code_len + 1 >= sizeof r->code) {
          c->code_copy = 0;
        } else {
          r->code[c->code_len++] = ch;
          r->code[c->code_len] = '\0';
        }
      } else if (pattern_step(&CODE, &c->k_code, ch)) {
        c->code_copy = 1;
      }
    }
  }
  return tokens;
}

// Feeds received bytes to the body decoder; returns 1 once the answer has ended.
static int feed_body(conn_t *c, const char *p, size_t n, long *tokens) {
  size_t i = 0;
  if (c->body == B_TO_CLOSE) {
    *tokens += scan_body(c, p, n);
    return 0;
  }
  if (c->body == B_LENGTH) {
    size_t take = (size_t)c->remaining < n ? (size_t)c->remaining : n;
    *tokens += scan_body(c, p, take);
    c->remaining -= (long)take;
    return c->remaining == 0;
  }
  while (i < n) {
    char ch = p[i];
    switch (c->chunk) {
      case K_SIZE:
        if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F')) {
          int d = ch <= '9' ? ch - '0' : (ch | 0x20) - 'a' + 10;
          c->remaining = c->remaining * 16 + d;
        } else if (ch == '\r') {
          c->chunk = K_SIZE_LF;
        } else {
          c->chunk = K_SIZE_EXT;
        }
        i++;
        break;
      case K_SIZE_EXT:
        if (ch == '\r') c->chunk = K_SIZE_LF;
        i++;
        break;
      case K_SIZE_LF:
        i++;
        if (c->remaining == 0) {
          c->chunk = K_TRAILER;
          c->trailer_nl = 1;
        } else {
          c->chunk = K_DATA;
        }
        break;
      case K_DATA: {
        size_t take = (size_t)c->remaining < n - i ? (size_t)c->remaining : n - i;
        *tokens += scan_body(c, p + i, take);
        c->remaining -= (long)take;
        i += take;
        if (c->remaining == 0) c->chunk = K_DATA_CR;
        break;
      }
      case K_DATA_CR:
        c->chunk = K_DATA_LF;
        i++;
        break;
      case K_DATA_LF:
        c->chunk = K_SIZE;
        c->remaining = 0;
        i++;
        break;
      case K_TRAILER:
        // After the last chunk: trailers, if any, then an empty line.
        if (ch == '\n') {
          if (c->trailer_nl) return 1;
          c->trailer_nl = 1;
        } else if (ch != '\r') {
          c->trailer_nl = 0;
        }
        i++;
        break;
    }
  }
  return 0;
}

// What happens to a connection whose answer ended: set by the mode.
static void (*on_answered)(conn_t *c, double t);

static void on_readable(conn_t *c, double t) {
  char buf[65536];
  for (;;) {
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      close_conn(c, t);  // the peer closed: a request on it ends with what it got
      return;
    }
    if (n < 0) return;
    if (c->req == NULL) continue;  // idle: nothing is expected
    size_t off = 0;
    long tokens = 0;
    int ended = 0;
    if (c->state == C_HEADERS) {
      size_t take = (size_t)n < sizeof c->head - 1 - c->headlen ? (size_t)n
                                                                  : sizeof c->head - 1 - c->headlen;
      memcpy(c->head + c->headlen, buf, take);
      size_t before = c->headlen;
      c->headlen += take;
      c->head[c->headlen] = '\0';
      char *end = strstr(c->head, "\r\n\r\n");
      if (end == NULL) {
        if (c->headlen == sizeof c->head - 1) close_conn(c, t);  // no end of headers in 8 KB
        continue;
      }
      c->headlen = (size_t)(end - c->head) + 4;
      off = c->headlen - before;
      if (!parse_head(c)) {
        close_conn(c, t);
        return;
      }
      c->state = C_BODY;
      if (c->body == B_LENGTH && c->remaining == 0) ended = 1;
    }
    if (!ended && c->state == C_BODY) ended = feed_body(c, buf + off, (size_t)n - off, &tokens);
    request_t *r = c->req;
    if (tokens > 0) {
      if (r->ttft < 0) {
        r->ttft = t - r->due;
      } else {
        if (r->ngaps == r->capgaps) {
          r->capgaps = r->capgaps ? r->capgaps * 2 : 64;
          r->gaps = realloc(r->gaps, sizeof(double) * (size_t)r->capgaps);
          if (r->gaps == NULL) die("realloc");
        }
        r->gaps[r->ngaps++] = t - r->last_token;
      }
      r->last_token = t;
      r->tokens += tokens;
    }
    if (ended) {
      record(r, t);
      c->req = NULL;
      c->served++;
      if (!c->keep_alive) {
        close_conn(c, t);
        return;
      }
      c->state = C_IDLE;
      on_answered(c, t);
      return;
    }
  }
}

static void on_event(conn_t *c, uint32_t events, double t) {
  if (c->state == C_CONNECTING) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      close_conn(c, t);
      return;
    }
    if (!(events & EPOLLOUT)) return;
    if (c->req == NULL) {  // opened ahead of use
      c->state = C_IDLE;
      on_answered(c, t);
      return;
    }
    c->req->connected = t;
    c->state = C_SENDING;
    try_send(c, t);
    return;
  }
  if (c->state == C_SENDING && (events & EPOLLOUT)) {
    try_send(c, t);
    return;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) on_readable(c, t);
}

// ---- Open loop.
static void idle_push(conn_t *c, double t) {
  (void)t;
  c->next_idle = idle_list;
  idle_list = c;
}

static void dispatch(double due, double t) {
  request_t *r = new_request(due);
  conn_t *c = idle_list;
  if (c != NULL) {
    idle_list = c->next_idle;
    c->next_idle = NULL;
  } else {
    c = open_conn();
    if (c->state == C_CLOSED) {
      c->req = r;
      close_conn(c, t);
      return;
    }
  }
  start_request(c, r, t);
}

// ---- Closed loop.
static void send_next(conn_t *c, double t) {
  if (t >= closed_until) {
    close_conn(c, t);
    return;
  }
  start_request(c, new_request(t), t);
}

static void read_file(const char *path, char **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) die(path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  *data = malloc((size_t)n + 1);
  if (*data == NULL || fread(*data, 1, (size_t)n, f) != (size_t)n) die(path);
  (*data)[n] = '\0';
  *len = (size_t)n;
  fclose(f);
}

int main(int argc, char **argv) {
  if (argc < 7) {
    fprintf(stderr,
            "usage: stream-client HOST PORT BODY_FILE[,…] OUT_FILE open SCHEDULE_FILE\n"
            "       stream-client HOST PORT BODY_FILE[,…] OUT_FILE closed CONNECTIONS DURATION_S\n");
    return 2;
  }
  host = argv[1];
  port = atoi(argv[2]);
  out = fopen(argv[4], "w");
  if (out == NULL) die(argv[4]);
  const char *mode = argv[5];

  struct rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  for (char *path = strtok(argv[3], ","); path != NULL; path = strtok(NULL, ",")) {
    if (nbodies == MAX_BODIES) {
      fprintf(stderr, "stream-client: at most %d bodies\n", MAX_BODIES);
      return 2;
    }
    char *body;
    size_t body_len;
    read_file(path, &body, &body_len);
    char *bytes = malloc(body_len + 512);
    if (bytes == NULL) die("malloc");
    size_t head = (size_t)snprintf(bytes, 512,
                                   "POST /v1/chat/completions HTTP/1.1\r\nHost: %s:%d\r\n"
                                   "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                                   host, port, body_len);
    memcpy(bytes + head, body, body_len);
    char *m = memmem(body, body_len, MARKER, MARKER_LEN);
    marker_at[nbodies] = m == NULL ? -1 : (long)(head + (size_t)(m - body));
    free(body);
    request_bytes[nbodies] = bytes;
    request_len[nbodies++] = head + body_len;
  }

  pattern_init(&CONTENT, "\"content\":\"");
  pattern_init(&DONE, "data: [DONE]");
  pattern_init(&ERROR, "\"error\"");
  pattern_init(&CODE, "\"code\":\"");
  ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) die("epoll_create1");

  double *schedule = NULL;
  size_t nschedule = 0, next = 0;
  if (strcmp(mode, "open") == 0) {
    char *text;
    size_t len;
    read_file(argv[6], &text, &len);
    size_t cap = 1024;
    schedule = malloc(cap * sizeof *schedule);
    for (char *s = strtok(text, "\n"); s != NULL; s = strtok(NULL, "\n")) {
      if (nschedule == cap) schedule = realloc(schedule, (cap *= 2) * sizeof *schedule);
      if (schedule == NULL) die("realloc");
      schedule[nschedule++] = atof(s);
    }
    on_answered = idle_push;
  } else if (strcmp(mode, "closed") == 0 && argc >= 8) {
    on_answered = send_next;
    closed_mode = 1;
  } else {
    fprintf(stderr, "stream-client: mode must be open or closed, got %s\n", mode);
    return 2;
  }

  start_ms = now_ms();
  double give_up;
  if (on_answered == send_next) {
    reopen = atol(argv[6]);
    closed_until = start_ms + atof(argv[7]) * 1e3;
    give_up = closed_until + 120e3;
  } else {
    give_up = start_ms + (nschedule ? schedule[nschedule - 1] : 0) + 120e3;
  }

  struct epoll_event events[1024];
  for (;;) {
    double t = now_ms();
    while (next < nschedule && start_ms + schedule[next] <= t) {
      dispatch(start_ms + schedule[next], t);
      next++;
    }
    // A connect that fails at once is closed and counted again: at most one round per turn.
    for (long k = reopen; k > 0 && t < closed_until; k--) {
      reopen--;
      dispatch(t, t);
    }
    if (next == nschedule && in_flight == 0 && (!closed_mode || t >= closed_until)) break;
    if (t > give_up) {
      fprintf(stderr, "stream-client: %ld requests still in flight 120 s after the last send\n",
                      in_flight);
      break;
    }
    int timeout = reopen > 0 ? 1 : 100;  // wake at once for what is due, never early
    if (next < nschedule) {
      double wait = start_ms + schedule[next] - t;
      timeout = wait <= 0 ? 0 : wait >= 99 ? 100 : (int)wait + 1;
    }
    int n = epoll_wait(ep, events, 1024, timeout);
    if (n < 0 && errno != EINTR) die("epoll_wait");
    t = now_ms();
    for (int i = 0; i < n; i++) on_event(events[i].data.ptr, events[i].events, t);
  }
  // Idle connections still open are closed by the process's exit.
  fclose(out);
  return 0;
}
