"""The 2.x quick start, "10分钟快速上手飞桨" (PaddlePaddle/docs, docs/guides/beginner/quick_start_cn.ipynb:
the complete program of section 三, "实践：手写数字识别任务"), verbatim with only the imports changed:
vision MNIST + Normalize, paddle.vision.models.LeNet in paddle.Model, Adam, CrossEntropyLoss,
paddle.metric.Accuracy, fit/evaluate, save/load and predict_batch."""

from tests import datafiles


def test_quick_start(user_session, capsys):
    written = datafiles.write_mnist(user_session / "data" / "mnist", train=128, test=32)

    # --- the tutorial (imports changed: paddle -> headrace) ---
    import headrace as paddle
    import numpy as np  # noqa: F811
    from headrace.vision.transforms import Normalize

    transform = Normalize(mean=[127.5], std=[127.5], data_format="CHW")
    # 下载数据集并初始化 DataSet
    train_dataset = paddle.vision.datasets.MNIST(mode="train", transform=transform)
    test_dataset = paddle.vision.datasets.MNIST(mode="test", transform=transform)

    # 模型组网并初始化网络
    lenet = paddle.vision.models.LeNet(num_classes=10)
    model = paddle.Model(lenet)

    # 模型训练的配置准备，准备损失函数，优化器和评价指标
    model.prepare(
        paddle.optimizer.Adam(parameters=model.parameters()),
        paddle.nn.CrossEntropyLoss(),
        paddle.metric.Accuracy(),
    )

    # 模型训练
    model.fit(train_dataset, epochs=5, batch_size=64, verbose=1)
    # 模型评估
    model.evaluate(test_dataset, batch_size=64, verbose=1)

    # 保存模型
    model.save("./output/mnist")
    # 加载模型
    model.load("output/mnist")

    # 从测试集中取出一张图片
    img, label = test_dataset[0]
    # 将图片shape从1*28*28变为1*1*28*28，增加一个batch维度，以匹配模型输入格式要求
    img_batch = np.expand_dims(img.astype("float32"), axis=0)

    # 执行推理并打印结果，此处predict_batch返回的是一个list，取出其中数据获得预测结果
    out = model.predict_batch(img_batch)[0]
    pred_label = out.argmax()
    print("true label: {}, pred label: {}".format(label[0], pred_label))
    # 可视化图片
    from matplotlib import pyplot as plt

    plt.imshow(img[0])
    # --- end of the tutorial ---

    lines = capsys.readouterr().out.splitlines()
    assert "Epoch 5/5" in lines and "Eval samples: 32" in lines
    assert sum(line.startswith("step 2/2 [==============================] - loss: ") for line in lines) == 5
    assert lines[-1] == f"true label: {written['test'][1][0]}, pred label: {int(np.argmax(out))}"
    expected = (written["test"][0][0].astype(np.float32) - 127.5) / 127.5
    np.testing.assert_allclose(img[0], expected, rtol=1e-6)
    assert out.shape == (1, 10)
    # the saved checkpoint holds the trained model: a fresh LeNet loading it predicts the same
    fresh = paddle.Model(paddle.vision.models.LeNet(num_classes=10))
    fresh.load("output/mnist")
    np.testing.assert_allclose(fresh.predict_batch(img_batch)[0], out, rtol=1e-5, atol=1e-6)
