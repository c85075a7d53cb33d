/* softmin over a row (torch.nn.Softmin): softmax of -x. A row activation
 * (templates/common/rowwise.h). Backward from the saved output: softmin is softmax of -x, so its
 * gradient is the negated softmax one, y (sum_j g_j y_j - g). */
#define KP_ROW_LOG 0
#define KP_ROW_NEGATE 1
