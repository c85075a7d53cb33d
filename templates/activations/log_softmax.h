/* log_softmax over a row (torch.nn.LogSoftmax): y_i = (x_i - max) - log(sum_j exp(x_j - max)),
 * computed so, not as log(softmax), which underflows. A row activation (templates/common/rowwise.h).
 * Backward from the saved output: g - exp(y) sum_j g_j. */
#define KP_ROW_LOG 1
#define KP_ROW_NEGATE 0
