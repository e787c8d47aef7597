/* curve.c - CURVE certificates, the process's zauth actor, and the one socket helper. */
#include "common/curve.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"

#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN 93 /* libzmq 4.3 "draft" option; the runtime supports it */
#endif

struct curve {
    zcert_t *cert;
    char public_key[CURVE_KEY_Z85_LEN + 1];
    char server_key[CURVE_KEY_Z85_LEN + 1];
};

static zactor_t *curve__auth;

/* The allow-list as names (issue 27): key -> base name of its certificate, read again when the
 * directory changes. */
struct curve__user {
    char key[CURVE_KEY_Z85_LEN + 1];
    char name[129];
};
static struct {
    char dir[4096];
    struct curve__user *users;
    size_t n;
    struct timespec mtime;
    time_t read_at; /* when it was last read (monotonic seconds) */
    bool loaded;
} curve__users;

static bool curve__name_ok(const char *name)
{
    if (name == NULL || name[0] == '\0' || name[0] == '.' || strlen(name) > 128)
        return false;
    for (const char *p = name; *p != '\0'; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return false;
    }
    return true;
}

static int curve__mkdir(const char *path, char *msg, size_t cap)
{
    if (mkdir(path, 0700) == 0)
        return 0;
    struct stat st;
    if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    return err_fmt(msg, cap, ERR_IO, "%s: %s", path, strerror(errno == 0 ? EEXIST : errno));
}

static bool curve__key_ok(const char *z85)
{
    if (z85 == NULL || strlen(z85) != CURVE_KEY_Z85_LEN)
        return false;
    uint8_t raw[32];
    return zmq_z85_decode(raw, z85) != NULL;
}

int curve_keygen(const char *dir, const char *name, bool force, char *msg, size_t cap)
{
    if (name == NULL)
        name = CURVE_DEFAULT_NAME;
    if (dir == NULL || dir[0] == '\0')
        return err_fmt(msg, cap, ERR_INVAL, "no key directory given");
    if (!curve__name_ok(name))
        return err_fmt(msg, cap, ERR_INVAL,
                       "invalid key name '%s' (letters, digits, '-', '_', '.'; not starting "
                       "with '.')",
                       name);
    char secret[4096], pub[4096], allow[4096], allowed[4096];
    if (snprintf(secret, sizeof secret, "%s/%s.secret", dir, name) >= (int)sizeof secret ||
        snprintf(pub, sizeof pub, "%s/%s.pub", dir, name) >= (int)sizeof pub ||
        snprintf(allow, sizeof allow, "%s/%s", dir, CURVE_ALLOW_SUBDIR) >= (int)sizeof allow ||
        snprintf(allowed, sizeof allowed, "%s/%s.pub", allow, name) >= (int)sizeof allowed)
        return err_fmt(msg, cap, ERR_INVAL, "key directory path too long");
    int rc = curve__mkdir(dir, msg, cap);
    if (rc == 0)
        rc = curve__mkdir(allow, msg, cap);
    if (rc != 0)
        return rc;
    if (!force && access(secret, F_OK) == 0)
        return err_fmt(msg, cap, ERR_EXISTS, "%s exists (use --force to replace it)", secret);
    zcert_t *cert = zcert_new();
    if (cert == NULL)
        return err_fmt(msg, cap, ERR_IO, "cannot generate a key pair");
    zcert_set_meta(cert, "name", "%s", name);
    zcert_set_meta(cert, "created-by", "paddock keygen");
    /* The secret file must never exist with wider permissions, even for a moment. */
    mode_t old = umask(077);
    unlink(secret);
    int failed = zcert_save_secret(cert, secret) != 0;
    umask(old);
    if (!failed)
        failed = chmod(secret, 0600) != 0;
    if (failed) {
        zcert_destroy(&cert);
        return err_fmt(msg, cap, ERR_IO, "%s: cannot write: %s", secret, strerror(errno));
    }
    if (zcert_save_public(cert, pub) != 0 || zcert_save_public(cert, allowed) != 0) {
        zcert_destroy(&cert);
        return err_fmt(msg, cap, ERR_IO, "%s: cannot write public certificate: %s", dir,
                       strerror(errno));
    }
    zcert_destroy(&cert);
    return 0;
}

/* Loads a certificate file: ERR_IO when it cannot be read, ERR_PARSE when it is no cert. */
static int curve__load_cert(const char *path, zcert_t **out, char *msg, size_t cap)
{
    if (access(path, R_OK) != 0)
        return err_fmt(msg, cap, ERR_IO, "%s: %s", path, strerror(errno));
    zcert_t *c = zcert_load(path);
    if (c == NULL || !curve__key_ok(zcert_public_txt(c))) {
        zcert_destroy(&c);
        return err_fmt(msg, cap, ERR_PARSE, "%s: not a CURVE certificate", path);
    }
    *out = c;
    return 0;
}

int curve_load(curve_t **out, const char *dir, const char *name, const char *server_name, char *msg,
               size_t cap)
{
    if (dir == NULL || !curve__name_ok(name) ||
        (server_name != NULL && !curve__name_ok(server_name)))
        return err_fmt(msg, cap, ERR_INVAL, "invalid key directory or name");
    if (server_name == NULL)
        server_name = name;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s.secret", dir, name) >= (int)sizeof path)
        return err_fmt(msg, cap, ERR_INVAL, "key directory path too long");
    curve_t *c = mem_calloc(1, sizeof *c);
    if (c == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    int rc = curve__load_cert(path, &c->cert, msg, cap);
    if (rc != 0) {
        mem_free(c);
        return rc;
    }
    /* A public-only file loads with an all-zero secret key. */
    static const char zero[] = "0000000000000000000000000000000000000000";
    const char *sec = zcert_secret_txt(c->cert);
    if (!curve__key_ok(sec) || strcmp(sec, zero) == 0) {
        curve_destroy(&c);
        return err_fmt(msg, cap, ERR_PARSE, "%s: no secret key in this file", path);
    }
    memcpy(c->public_key, zcert_public_txt(c->cert), CURVE_KEY_Z85_LEN);
    snprintf(path, sizeof path, "%s/%s.pub", dir, server_name);
    zcert_t *server = NULL;
    rc = curve__load_cert(path, &server, msg, cap);
    if (rc != 0) {
        curve_destroy(&c);
        return rc;
    }
    memcpy(c->server_key, zcert_public_txt(server), CURVE_KEY_Z85_LEN);
    zcert_destroy(&server);
    *out = c;
    return 0;
}

void curve_destroy(curve_t **cp)
{
    if (cp == NULL || *cp == NULL)
        return;
    zcert_destroy(&(*cp)->cert);
    mem_free(*cp);
    *cp = NULL;
}

const char *curve_public_key(const curve_t *c)
{
    return c->public_key;
}

const char *curve_server_key(const curve_t *c)
{
    return c->server_key;
}

int curve_auth_start(const char *allow_dir, char *msg, size_t cap)
{
    if (curve__auth != NULL)
        return err_fmt(msg, cap, ERR_EXISTS, "zauth is already running in this process");
    struct stat st;
    if (allow_dir == NULL || strcmp(allow_dir, "*") == 0)
        return err_fmt(msg, cap, ERR_INVAL, "an allow-list directory is required");
    if (stat(allow_dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(allow_dir, R_OK | X_OK) != 0)
        return err_fmt(msg, cap, ERR_IO, "%s: not a readable directory", allow_dir);
    /* The actor thread inherits this mask: with every signal blocked there, a signal (a PN's
       SIGCHLD for every task) can never interrupt zauth's poll, which czmq treats as the end of
       the actor; without zauth every later CURVE handshake fails. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    zactor_t *auth = zactor_new(zauth, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (auth == NULL)
        return err_fmt(msg, cap, ERR_SYS, "cannot start zauth");
    /* Each command is acknowledged; sockets bound before the ack would meet no ZAP handler. */
    if (zstr_sendx(auth, "CURVE", allow_dir, NULL) != 0 || zsock_wait(auth) != 0) {
        zactor_destroy(&auth);
        return err_fmt(msg, cap, ERR_SYS, "zauth did not accept the CURVE allow-list");
    }
    curve__auth = auth;
    memset(&curve__users, 0, sizeof curve__users);
    snprintf(curve__users.dir, sizeof curve__users.dir, "%s", allow_dir);
    return 0;
}

void curve_auth_stop(void)
{
    zactor_destroy(&curve__auth);
    mem_free(curve__users.users);
    memset(&curve__users, 0, sizeof curve__users);
}

const char *curve_frame_key(zframe_t *frame)
{
    if (frame == NULL)
        return NULL;
    const char *k = zframe_meta(frame, "User-Id");
    return k != NULL && strlen(k) == CURVE_KEY_Z85_LEN ? k : NULL;
}

static int curve__users_read(void)
{
    DIR *d = opendir(curve__users.dir);
    if (d == NULL)
        return ERR_NOTFOUND;
    struct curve__user *u = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= 4 || len - 4 >= sizeof u->name || e->d_name[0] == '.' ||
            strcmp(e->d_name + len - 4, ".pub") != 0)
            continue;
        char path[4096 + 256];
        snprintf(path, sizeof path, "%s/%s", curve__users.dir, e->d_name);
        zcert_t *c = NULL;
        char why[64];
        if (curve__load_cert(path, &c, why, sizeof why) != 0)
            continue; /* zauth skips it too */
        if (n == cap) {
            size_t ncap = cap < 16 ? 16 : cap * 2;
            void *p = mem_reallocarray(u, ncap, sizeof *u);
            if (p == NULL) {
                zcert_destroy(&c);
                rc = ERR_NOMEM;
                break;
            }
            u = p;
            cap = ncap;
        }
        memcpy(u[n].key, zcert_public_txt(c), CURVE_KEY_Z85_LEN);
        u[n].key[CURVE_KEY_Z85_LEN] = '\0';
        memcpy(u[n].name, e->d_name, len - 4);
        u[n].name[len - 4] = '\0';
        n++;
        zcert_destroy(&c);
    }
    closedir(d);
    if (rc != 0) {
        mem_free(u);
        return rc;
    }
    mem_free(curve__users.users);
    curve__users.users = u;
    curve__users.n = n;
    curve__users.loaded = true;
    return 0;
}

static bool curve__users_find(const char *key, char *name, size_t cap)
{
    for (size_t i = 0; i < curve__users.n; i++) {
        if (strcmp(curve__users.users[i].key, key) == 0) {
            snprintf(name, cap, "%s", curve__users.users[i].name);
            return true;
        }
    }
    return false;
}

int curve_auth_user(const char *key, char *name, size_t cap)
{
    if (curve__auth == NULL || curve__users.dir[0] == '\0')
        return ERR_STATE;
    if (key == NULL || cap == 0)
        return ERR_NOTFOUND;
    struct stat st;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    bool changed =
        stat(curve__users.dir, &st) == 0 && (st.st_mtim.tv_sec != curve__users.mtime.tv_sec ||
                                             st.st_mtim.tv_nsec != curve__users.mtime.tv_nsec);
    /* read again when a file was added, removed or renamed (the directory's mtime); a key not
       found is looked for once more at most once a second (a certificate rewritten in place) */
    for (int pass = 0; pass < 2; pass++) {
        if (!curve__users.loaded || changed || (pass == 1 && now.tv_sec != curve__users.read_at)) {
            int rc = curve__users_read();
            if (rc == ERR_NOMEM)
                return rc;
            if (changed)
                curve__users.mtime = st.st_mtim;
            curve__users.read_at = now.tv_sec;
            changed = false;
        }
        if (curve__users_find(key, name, cap))
            return 0;
    }
    return ERR_NOTFOUND;
}

bool curve_auth_running(void)
{
    return curve__auth != NULL;
}

int curve_apply(zsock_t *sock, const curve_t *c, enum curve_role role, const char *server_key,
                char *msg, size_t cap)
{
    if (c == NULL)
        return 0; /* insecure mode, chosen by the caller */
    if (sock == NULL)
        return err_fmt(msg, cap, ERR_INVAL, "no socket");
    void *h = zsock_resolve(sock);
    if (role == CURVE_SERVER) {
        if (curve__auth == NULL)
            return err_fmt(msg, cap, ERR_STATE,
                           "CURVE server without zauth would accept any client key: call "
                           "curve_auth_start first");
        int one = 1;
        if (zmq_setsockopt(h, ZMQ_ZAP_DOMAIN, CURVE_ZAP_DOMAIN, strlen(CURVE_ZAP_DOMAIN)) != 0 ||
            zmq_setsockopt(h, ZMQ_ZAP_ENFORCE_DOMAIN, &one, sizeof one) != 0)
            return err_fmt(msg, cap, ERR_SYS, "cannot set the ZAP domain: %s",
                           zmq_strerror(zmq_errno()));
        zcert_apply(c->cert, sock);
        if (zmq_setsockopt(h, ZMQ_CURVE_SERVER, &one, sizeof one) != 0)
            return err_fmt(msg, cap, ERR_SYS, "cannot make a CURVE server: %s",
                           zmq_strerror(zmq_errno()));
        return 0;
    }
    if (role != CURVE_CLIENT)
        return err_fmt(msg, cap, ERR_INVAL, "unknown CURVE role %d", (int)role);
    const char *key = server_key != NULL ? server_key : c->server_key;
    if (!curve__key_ok(key))
        return err_fmt(msg, cap, ERR_INVAL, "server key is not a 40-character Z85 key");
    zcert_apply(c->cert, sock);
    if (zmq_setsockopt(h, ZMQ_CURVE_SERVERKEY, key, CURVE_KEY_Z85_LEN) != 0)
        return err_fmt(msg, cap, ERR_SYS, "cannot set the CURVE server key: %s",
                       zmq_strerror(zmq_errno()));
    return 0;
}

bool curve_endpoint_is_local(const char *endpoint)
{
    if (endpoint == NULL)
        return false;
    if (strncmp(endpoint, "ipc://", 6) == 0 || strncmp(endpoint, "inproc://", 9) == 0)
        return true;
    if (strncmp(endpoint, "tcp://", 6) != 0)
        return false;
    const char *host = endpoint + 6;
    if (strchr(host, ';') != NULL)
        return false; /* source-address forms: be conservative */
    char buf[256];
    if (host[0] == '[') {
        const char *close = strchr(host, ']');
        if (close == NULL || close[1] != ':' || (size_t)(close - host - 1) >= sizeof buf)
            return false;
        memcpy(buf, host + 1, (size_t)(close - host - 1));
        buf[close - host - 1] = '\0';
        struct in6_addr a6;
        return inet_pton(AF_INET6, buf, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
    }
    const char *colon = strrchr(host, ':');
    if (colon == NULL || (size_t)(colon - host) >= sizeof buf)
        return false;
    memcpy(buf, host, (size_t)(colon - host));
    buf[colon - host] = '\0';
    if (strcmp(buf, "localhost") == 0)
        return true;
    struct in_addr a4;
    return inet_pton(AF_INET, buf, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

int curve_check_listen(const char *endpoint, const curve_t *c, bool insecure, char *msg, size_t cap)
{
    if (c != NULL || insecure || curve_endpoint_is_local(endpoint))
        return 0;
    return err_fmt(msg, cap, ERR_AUTH,
                   "refusing to listen on %s without CURVE keys (make keys with 'paddock keygen' "
                   "or pass --insecure)",
                   endpoint != NULL ? endpoint : "(null)");
}
