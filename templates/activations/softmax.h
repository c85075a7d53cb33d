/* softmax over a row (torch.nn.Softmax): y_i = exp(x_i - max) / sum_j exp(x_j - max). A row
 * activation: its math is the row kernel's (templates/common/rowwise.h); this snippet names the
 * family member. Backward from the saved output: y (g - sum_j g_j y_j). */
#define KP_ROW_LOG 0
#define KP_ROW_NEGATE 0
