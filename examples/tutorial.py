"""JAX's tutorial, section by section, run by s2s with two imports changed:
`import numpy as jnp` for `import jax.numpy as jnp`, `import s2s as jax` for `import jax`.

Each section prints what it shows and checks it against a closed form or plain NumPy
(a failed check raises). Run it: python examples/tutorial.py
"""

import math

import numpy as np
import numpy as jnp

import s2s as jax
from s2s import lax, optimizers, random


def check(label, got, expected, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=label)
    print(f"  {label}: ok")


def arrays_and_keys():
    print("1. arrays and explicit random keys")
    key = random.PRNGKey(0)
    key, subkey = random.split(key)
    x = random.normal(subkey, (3000,))
    print(f"  key {key}, a standard normal sample: mean {x.mean():+.3f}, std {x.std():.3f}")
    check("the same key gives the same numbers", random.normal(subkey, (3000,)), x, rtol=0)
    assert abs(x.mean()) < 0.1 and abs(x.std() - 1.0) < 0.1
    return key


def relax(x, steps):
    for _ in range(steps):
        x = x - 0.01 * (x * x * x - 2.0 * x)
    return x


def jitted_loop():
    print("2. a 1000-step Python loop under jit")
    x0 = np.linspace(0.1, 2.0, 5)
    fast = jax.jit(relax, static_argnums=(1,))
    check("jit(relax) equals the NumPy loop", fast(x0, 1000), relax(x0, 1000))
    check("every positive start relaxes to sqrt(2)", fast(x0, 1000), np.full(5, math.sqrt(2.0)), rtol=1e-6)


def squared_error(w, b, x, y):
    return jnp.sum((x @ w + b - y) ** 2)


def gradients_with_argnums(key):
    print("3. grad with argnums on (w, b)")
    kx, kw = random.split(key)
    x = random.normal(kx, (8, 3))
    w = random.normal(kw, (3,))
    b = 0.5
    y = x @ np.array([1.0, -2.0, 0.5])
    dw, db = jax.grad(squared_error, argnums=(0, 1))(w, b, x, y)
    residual = x @ w + b - y
    check("dL/dw = 2 x^T r", dw, 2 * x.T @ residual)
    check("dL/db = 2 sum(r)", db, 2 * residual.sum())


def cubic(x):
    return x ** 3 + 2.0 * x ** 2 - 3.0 * x + 1.0


def energy(v):
    return jnp.sum(v ** 4) + v[0] * v[1]


def higher_derivatives():
    print("4. grad(grad(f)) and hessian")
    check("d2/dx2 of a cubic at 1.5", jax.grad(jax.grad(cubic))(1.5), 6 * 1.5 + 4.0)
    v = np.array([0.5, -1.0, 2.0])
    expected = np.diag(12 * v ** 2)
    expected[0, 1] = expected[1, 0] = 1.0
    check("hessian of sum(v**4) + v0 v1", jax.hessian(energy)(v), expected)


def polar(p):
    r, theta = p[0], p[1]
    return jnp.array([r * jnp.cos(theta), r * jnp.sin(theta)])


def jacobians():
    print("5. jacfwd of a vector function")
    p = np.array([2.0, 0.3])
    expected = np.array([[math.cos(0.3), -2.0 * math.sin(0.3)], [math.sin(0.3), 2.0 * math.cos(0.3)]])
    check("jacfwd(polar)", jax.jacfwd(polar)(p), expected)
    check("jacrev(polar)", jax.jacrev(polar)(p), expected)


def single_predict(w, x):
    return jnp.tanh(jnp.dot(w, x))


def batching():
    print("6. vmap(single_predict, in_axes=(None, 0)), and jit of it in both orders")
    w = np.array([0.5, -0.25, 1.0])
    xs = np.arange(12.0).reshape(4, 3) / 10.0
    expected = np.tanh(xs @ w)
    check("vmap", jax.vmap(single_predict, in_axes=(None, 0))(w, xs), expected)
    check("jit(vmap)", jax.jit(jax.vmap(single_predict, in_axes=(None, 0)))(w, xs), expected)
    check("vmap(jit)", jax.vmap(jax.jit(single_predict), in_axes=(None, 0))(w, xs), expected)


def mse(params, x, y):
    w, b = params
    return jnp.mean((w * x + b - y) ** 2)


def linear_regression(key):
    print("7. linear regression trained by gradient descent, on data from s2s.random")
    kx, knoise = random.split(key)
    x = random.normal(kx, (200,))
    y = 3.0 * x - 1.0 + 0.1 * random.normal(knoise, (200,))
    step = jax.jit(jax.grad(mse))
    params = (0.0, 0.0)
    for _ in range(300):
        dw, db = step(params, x, y)
        params = (params[0] - 0.1 * dw, params[1] - 0.1 * db)
    design = np.stack([x, np.ones_like(x)], axis=1)
    least_squares = np.linalg.lstsq(design, y, rcond=None)[0]
    print(f"  w = {params[0]:.4f}, b = {params[1]:.4f} (least squares: {least_squares[0]:.4f}, {least_squares[1]:.4f})")
    check("gradient descent reaches least squares", params, least_squares, rtol=1e-6)
    return params, x, y


def per_example_gradients(params, x, y):
    print("8. per-example gradients with vmap(grad(loss))")
    w, b = params
    grads = jax.vmap(jax.grad(mse), in_axes=(None, 0, 0))((w, b), x[:5], y[:5])
    residual = w * x[:5] + b - y[:5]
    check("d/dw per example", grads[0], 2 * residual * x[:5])
    check("d/db per example", grads[1], 2 * residual)


def mlp(params, x):
    h = jnp.tanh(x @ params["hidden"]["w"] + params["hidden"]["b"])
    return h @ params["out"]["w"] + params["out"]["b"]


def cross_entropy(params, x, labels):
    logits = mlp(params, x)
    shifted = logits - jnp.max(logits, axis=1, keepdims=True)
    log_probs = shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=1, keepdims=True))
    picked = log_probs[jnp.arange(labels.shape[0]), labels]
    return -jnp.mean(picked)


def mlp_with_adam(key):
    print("9. an MLP on dict parameters, softmax cross-entropy with integer labels, Adam")
    k1, k2, k3 = random.split(key, 3)
    x = random.normal(k1, (60, 2))
    labels = (x[:, 0] * x[:, 1] > 0).astype(np.int64)  # XOR of the signs: not linearly separable
    params = {"hidden": {"w": 0.5 * random.normal(k2, (2, 16)), "b": np.zeros(16)},
              "out": {"w": 0.5 * random.normal(k3, (16, 2)), "b": np.zeros(2)}}
    init, update, get_params = optimizers.adam(0.05)
    state = init(params)
    value_and_grad = jax.jit(jax.value_and_grad(cross_entropy))
    first, _ = value_and_grad(params, x, labels)
    for i in range(300):
        value, grads = value_and_grad(get_params(state), x, labels)
        state = update(i, grads, state)
    accuracy = np.mean(np.argmax(mlp(get_params(state), x), axis=1) == labels)
    print(f"  loss {first:.3f} -> {value:.3f}, training accuracy {accuracy:.2f}")
    assert value < 0.5 * first and accuracy > 0.9
    h = 1e-6
    p = get_params(state)
    bumped = {"hidden": dict(p["hidden"]), "out": dict(p["out"])}
    bumped["out"]["b"] = p["out"]["b"] + np.array([h, 0.0])
    below = {"hidden": dict(p["hidden"]), "out": dict(p["out"])}
    below["out"]["b"] = p["out"]["b"] - np.array([h, 0.0])
    central = (cross_entropy(bumped, x, labels) - cross_entropy(below, x, labels)) / (2 * h)
    check("d loss / d out.b[0] against central differences", value_and_grad(p, x, labels)[1]["out"]["b"][0],
          central, rtol=1e-6, atol=1e-8)


def clipped_growth(x, steps):
    def body(i, acc):
        return lax.cond(acc < 10.0, lambda a: a * x, lambda a: a, acc)

    return lax.fori_loop(0, steps, body, 1.0)


def control_flow():
    print("10. lax.cond and lax.fori_loop, differentiated")
    # x = 1.5: 1.5**5 = 7.6 < 10, 1.5**6 = 11.4 stops the growth: the result is x**6
    check("value", clipped_growth(1.5, 20), 1.5 ** 6)
    check("d/dx = 6 x^5", jax.grad(clipped_growth)(1.5, 20), 6 * 1.5 ** 5)
    check("under jit", jax.jit(jax.grad(clipped_growth), static_argnums=(1,))(1.5, 20), 6 * 1.5 ** 5)


def reported(x):
    y = jnp.sin(x) * 2.0
    jax.debug.print("  (debug.print inside jit) y = {y:.4f}", y=y)
    return y * y


def printing():
    print("11. debug.print inside compiled code")
    check("jit(reported)", jax.jit(reported)(0.5), (2 * math.sin(0.5)) ** 2)


def normalise(x):
    return x / lax.psum(jnp.sum(x), "i")


def cube(x):
    return x * x * x


def sine_sum(v):
    return jnp.sum(jnp.sin(v))


def parallel():
    print(f"12. pmap over the {len(jax.devices())} CPU devices, with a collective")
    n = len(jax.devices())
    x = np.arange(1.0, 1.0 + 3 * n).reshape(n, 3)
    check("pmap(cube)", jax.pmap(cube)(x), x ** 3)
    check("pmap(x / psum(sum(x), 'i'))", jax.pmap(normalise, "i")(x), x / x.sum())
    check("pmap(grad(f))", jax.pmap(jax.grad(sine_sum))(x), np.cos(x))


def main():
    key = arrays_and_keys()
    jitted_loop()
    keys = random.split(key, 4)
    gradients_with_argnums(keys[0])
    higher_derivatives()
    jacobians()
    batching()
    params, x, y = linear_regression(keys[1])
    per_example_gradients(params, x, y)
    mlp_with_adam(keys[2])
    control_flow()
    printing()
    parallel()
    print("every section ran and matched")


if __name__ == "__main__":
    main()
