/* deploy_probe - one authenticated request to one Paddock server, for tests/deploy.
 *
 * usage: deploy_probe --rm|--pn ENDPOINT --keys DIR --name NAME --server-pub FILE
 *                     [--marker PATH | --sh SCRIPT] [--task-id ID] [--follow] [--timeout-ms N]
 * Connects a DEALER with the certificate DIR/NAME.secret to ENDPOINT, trusting the server key
 * in FILE (a certificate's public file), and sends one request: to an RM an ADMIN_QUERY
 * rm_status; to a PN a TASK_CREATE of `/bin/sh -c 'touch PATH'` (PATH from --marker, so a test
 * can tell whether the command ever ran; --sh runs SCRIPT instead). Prints the type of the reply
 * ("TASK_STATUS queued", "ERROR -19 node draining: ..."); with --follow it goes on printing
 * statuses until a terminal one (or an ERROR), one line each, flushed.
 * Exit 0: a reply came; 1: none within the timeout (default 2000 ms) - the server did not let
 * this client in; 2: usage or local error.
 *
 * usage: deploy_probe --json PATH < DOCUMENT
 * Prints one value of a JSON document read from stdin (the shell tests have no jq): PATH is
 * dot-separated object keys, array indexes, or KEY=VALUE to pick the array element whose
 * string member KEY equals VALUE ("nodes.name=pn-1.state"). Strings print raw, other values as
 * compact JSON. Exit 1 when the path leads nowhere.
 *
 * usage: deploy_probe --notify-socket PATH --until TEXT [--timeout-ms N]
 * Binds a datagram socket at PATH (what systemd passes as NOTIFY_SOCKET) and prints every
 * notification, one line each (newlines inside shown as spaces), until one contains TEXT
 * (exit 0) or the timeout (exit 1).
 *
 * usage: deploy_probe --free-port
 * Prints a TCP port on 127.0.0.1 that was free a moment ago (bound to 0, then closed). */
#include "common/clock.h"
#include "common/curve.h"
#include "common/port.h"
#include "common/zuv.h"
#include "proto/proto.h"

#include <czmq.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int probe_usage(void)
{
    fprintf(stderr, "usage: deploy_probe --rm|--pn ENDPOINT --keys DIR --name NAME "
                    "--server-pub FILE [--marker PATH] [--timeout-ms N]\n");
    return 2;
}

static int probe_json(const char *path)
{
    json_error_t jerr;
    json_t *root = json_loadf(stdin, JSON_DISABLE_EOF_CHECK, &jerr);
    if (!root) {
        fprintf(stderr, "deploy_probe: not JSON: %s\n", jerr.text);
        return 2;
    }
    char *copy = strdup(path);
    json_t *v = root;
    for (char *seg = strtok(copy, "."); v && seg; seg = strtok(NULL, ".")) {
        char *eq = strchr(seg, '=');
        if (json_is_object(v)) {
            v = json_object_get(v, seg);
        } else if (json_is_array(v) && eq) {
            *eq = '\0';
            json_t *hit = NULL, *el;
            size_t i;
            json_array_foreach(v, i, el)
            {
                const char *s = json_string_value(json_object_get(el, seg));
                if (!hit && s && strcmp(s, eq + 1) == 0)
                    hit = el;
            }
            v = hit;
        } else if (json_is_array(v)) {
            v = json_array_get(v, strtoul(seg, NULL, 10));
        } else {
            v = NULL;
        }
    }
    int rc = 1;
    if (v && json_is_string(v)) {
        printf("%s\n", json_string_value(v));
        rc = 0;
    } else if (v) {
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        printf("%s\n", text ? text : "");
        free(text);
        rc = 0;
    }
    free(copy);
    json_decref(root);
    return rc;
}

static int probe_notify(const char *path, const char *until, long timeout_ms)
{
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof a.sun_path)
        return 2;
    strcpy(a.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("deploy_probe: notify socket");
        return 2;
    }
    uint64_t end = clock_mono_ms() + (uint64_t)timeout_ms;
    int found = 0;
    while (!found && clock_mono_ms() < end) {
        struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        char buf[4096];
        ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        found = strstr(buf, until) != NULL;
        for (char *c = buf; *c; c++)
            if (*c == '\n')
                *c = ' ';
        printf("%s\n", buf);
        fflush(stdout);
    }
    close(fd);
    unlink(path);
    return found ? 0 : 1;
}

static int probe_free_port(void)
{
    int fd, port = port_reserve(&fd);
    if (port < 0) {
        perror("deploy_probe: free port");
        return 2;
    }
    printf("%d\n", port);
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--free-port") == 0)
        return probe_free_port();
    if (argc == 3 && strcmp(argv[1], "--json") == 0)
        return probe_json(argv[2]);
    if (argc >= 5 && strcmp(argv[1], "--notify-socket") == 0 && strcmp(argv[3], "--until") == 0)
        return probe_notify(
            argv[2], argv[4],
            argc >= 7 && strcmp(argv[5], "--timeout-ms") == 0 ? strtol(argv[6], NULL, 10) : 10000);
    const char *ep = NULL, *keys = NULL, *name = NULL, *server_pub = NULL;
    const char *marker = "/nonexistent/deploy-probe-marker", *sh = NULL, *task_id = "probe";
    int pn = -1, follow = 0;
    long timeout_ms = 2000;
    for (int i = 1; i < argc; i += 2) {
        if (strcmp(argv[i], "--follow") == 0) {
            follow = 1;
            i--;
            continue;
        }
        if (i + 1 >= argc)
            return probe_usage();
        if (strcmp(argv[i], "--rm") == 0 || strcmp(argv[i], "--pn") == 0) {
            pn = strcmp(argv[i], "--pn") == 0;
            ep = argv[i + 1];
        } else if (strcmp(argv[i], "--keys") == 0) {
            keys = argv[i + 1];
        } else if (strcmp(argv[i], "--name") == 0) {
            name = argv[i + 1];
        } else if (strcmp(argv[i], "--server-pub") == 0) {
            server_pub = argv[i + 1];
        } else if (strcmp(argv[i], "--sh") == 0) {
            sh = argv[i + 1];
        } else if (strcmp(argv[i], "--task-id") == 0) {
            task_id = argv[i + 1];
        } else if (strcmp(argv[i], "--marker") == 0) {
            marker = argv[i + 1];
        } else if (strcmp(argv[i], "--timeout-ms") == 0) {
            timeout_ms = strtol(argv[i + 1], NULL, 10);
        } else {
            return probe_usage();
        }
    }
    if (pn < 0 || timeout_ms <= 0 || (keys && (!name || !server_pub)))
        return probe_usage();
    zsys_handler_set(NULL);
    char msg[512];
    /* without --keys: a plain connection (a daemon on loopback without keys) */
    zcert_t *server = keys ? zcert_load(server_pub) : zcert_new();
    curve_t *c = NULL;
    if (!server || (keys && curve_load(&c, keys, name, NULL, msg, sizeof msg) != 0)) {
        fprintf(stderr, "deploy_probe: cannot load keys (%s)\n", server ? msg : server_pub);
        zcert_destroy(&server);
        return 2;
    }
    zsock_t *z = zuv_socket(ZMQ_DEALER, PROTO_MAX_MSG_BYTES);
    int rc = !z  ? -1
             : c ? curve_apply(z, c, CURVE_CLIENT, zcert_public_txt(server), msg, sizeof msg)
                 : 0;
    zcert_destroy(&server);
    curve_destroy(&c);
    if (rc != 0 || zsock_connect(z, "%s", ep) != 0) {
        fprintf(stderr, "deploy_probe: cannot connect to %s\n", ep);
        zsock_destroy(&z);
        return 2;
    }
    proto_msg_t m;
    char *args[] = {"/bin/sh", "-c", NULL};
    char script[600];
    if (pn) {
        snprintf(script, sizeof script, "touch '%s'", marker);
        args[2] = sh ? (char *)sh : script;
        proto_msg_init(&m, PROTO_TASK_CREATE);
        m.task_create.job_id = "j-deploy-probe";
        m.task_create.task_id = (char *)task_id;
        m.task_create.task_class = PROTO_CLASS_REGULAR;
        m.task_create.argv = args;
        m.task_create.argc = 3;
        m.task_create.cpu = 0.1;
        m.task_create.mem_mb = 16;
        m.task_create.runtime_ms = 100;
    } else {
        proto_msg_init(&m, PROTO_ADMIN_QUERY);
        m.admin_query.kind = PROTO_ADMIN_RM_STATUS;
    }
    m.req_id = 1;
    proto_buf_t buf;
    proto_buf_init(&buf);
    rc = proto_encode(&m, &buf, msg, sizeof msg);
    if (rc == 0)
        rc = zsock_send(z, "b", buf.data, buf.len);
    proto_buf_close(&buf);
    if (rc != 0) {
        fprintf(stderr, "deploy_probe: cannot send\n");
        zsock_destroy(&z);
        return 2;
    }
    int got = 0, done = 0;
    uint64_t end = clock_mono_ms() + (uint64_t)timeout_ms;
    zpoller_t *poller = zpoller_new(z, NULL);
    while (!done && clock_mono_ms() < end) {
        if (zpoller_wait(poller, 50) != z)
            continue;
        zframe_t *f = zframe_recv(z);
        proto_msg_t r;
        proto_stats_t st;
        proto_stats_init(&st);
        if (f && proto_decode(zframe_data(f), zframe_size(f), &r, &st, NULL, 0) == 0) {
            if (r.type == PROTO_TASK_STATUS) {
                printf("TASK_STATUS %s%s%s\n", proto_task_state_name(r.task_status.state),
                       r.task_status.reason ? " " : "",
                       r.task_status.reason ? r.task_status.reason : "");
                done = !follow || proto_task_state_terminal(r.task_status.state);
            } else if (r.type == PROTO_ERROR) {
                printf("ERROR %d %s\n", r.error.code, r.error.text ? r.error.text : "");
                done = 1;
            } else {
                printf("%s\n", proto_type_name(r.type));
                done = 1;
            }
            fflush(stdout);
            proto_msg_close(&r);
            got = 1;
        }
        zframe_destroy(&f);
    }
    zpoller_destroy(&poller);
    zsock_destroy(&z);
    if (!got)
        printf("no reply within %ld ms\n", timeout_ms);
    return got ? 0 : 1;
}
