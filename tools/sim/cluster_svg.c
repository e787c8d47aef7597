/* cluster_svg.c - a self-contained SVG of queueing-time CDFs (Apollo Figure 11's shape): x is the
 * queueing time on a log scale (values below 1 ms are drawn at 1 ms), y the share of tasks. */
#include <math.h>
#include <stdio.h>

#include "common/err.h"
#include "tools/sim/cluster.h"

#define SVG_W  640.0
#define SVG_H  400.0
#define SVG_L  70.0
#define SVG_R  20.0
#define SVG_T  40.0
#define SVG_B  50.0
#define SVG_LO -3.0 /* log10 seconds */

static const char *const svg__colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};

int cluster_svg_cdf(const char *path, const char *title, const double *const *samples,
                    const size_t *n, const char *const *labels, size_t nseries)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return ERR_IO;
    double hi = 0;
    for (size_t s = 0; s < nseries; s++)
        if (n[s] > 0 && samples[s][n[s] - 1] > hi)
            hi = samples[s][n[s] - 1];
    double lhi = ceil(log10(hi > 1e-3 ? hi : 1e-3));
    if (lhi <= SVG_LO)
        lhi = SVG_LO + 1;
    double pw = SVG_W - SVG_L - SVG_R, ph = SVG_H - SVG_T - SVG_B;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%.0f\" y=\"22\" font-size=\"14\">%s</text>\n",
            SVG_W, SVG_H, SVG_L, title);
    for (double d = SVG_LO; d <= lhi + 1e-9; d += 1) {
        double x = SVG_L + (d - SVG_LO) / (lhi - SVG_LO) * pw;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s%g s</text>\n",
                x, SVG_T, x, SVG_T + ph, x, SVG_T + ph + 16, d == SVG_LO ? "&lt;=" : "",
                pow(10, d));
    }
    for (int k = 0; k <= 4; k++) {
        double y = SVG_T + ph - ph * k / 4.0;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%d%%</text>\n",
                SVG_L, y, SVG_L + pw, y, SVG_L - 6, y + 4, k * 25);
    }
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">task queueing time at the PN "
            "(log scale)</text>\n"
            "<text x=\"16\" y=\"%.1f\" transform=\"rotate(-90 16 %.1f)\" "
            "text-anchor=\"middle\">share of tasks</text>\n",
            SVG_L + pw / 2, SVG_H - 10, SVG_T + ph / 2, SVG_T + ph / 2);
    for (size_t s = 0; s < nseries; s++) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
                svg__colors[s % 4]);
        /* At most ~400 points: the CDF at evenly spaced quantiles. */
        size_t steps = n[s] < 400 ? n[s] : 400;
        for (size_t k = 0; k < steps; k++) {
            size_t i = steps > 1 ? k * (n[s] - 1) / (steps - 1) : 0;
            double v = samples[s][i];
            double lv = log10(v > 1e-3 ? v : 1e-3);
            double x = SVG_L + (lv - SVG_LO) / (lhi - SVG_LO) * pw;
            double y = SVG_T + ph - ph * (double)(i + 1) / (double)n[s];
            fprintf(f, "%.1f,%.1f ", x, y);
        }
        fprintf(f, "\"/>\n<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%s</text>\n", SVG_L + pw - 170,
                SVG_T + ph - 40 + 16 * (double)s, svg__colors[s % 4], labels[s]);
    }
    fprintf(f, "</svg>\n");
    return fclose(f) == 0 ? 0 : ERR_IO;
}
