"""The 2.x training, evaluation and inference guide, "模型训练、评估与推理" (PaddlePaddle/docs,
docs/guides/beginner/train_eval_predict_cn.ipynb): section 1.2 (MNIST + the Sequential MLP) and
section 三 (the eager loop with paddle.io.DataLoader, loss.backward, optim.step/clear_grad and
paddle.metric.accuracy; evaluation; inference), verbatim with the imports changed and two lines
written for 2.5+ semantics (marked "changed": the tutorial's output shows it ran on Paddle 2.2)."""
import numpy as np

from tests import datafiles


def test_eager_training_loop_with_a_dataloader(user_session, capsys):
    written = datafiles.write_mnist(user_session / "data" / "mnist", train=128, test=64)
    import headrace as paddle

    # 1.2 准备训练用的数据集和模型
    from headrace.vision.transforms import Normalize

    transform = Normalize(mean=[127.5], std=[127.5], data_format='CHW')
    # 加载 MNIST 训练集和测试集
    train_dataset = paddle.vision.datasets.MNIST(mode='train', transform=transform)
    test_dataset = paddle.vision.datasets.MNIST(mode='test', transform=transform)

    # 模型组网，构建并初始化一个模型 mnist
    mnist = paddle.nn.Sequential(
        paddle.nn.Flatten(1, -1),
        paddle.nn.Linear(784, 512),
        paddle.nn.ReLU(),
        paddle.nn.Dropout(0.2),
        paddle.nn.Linear(512, 10)
    )
    images = np.stack([train_dataset[i][0] for i in range(len(train_dataset))])
    labels = written["train"][1].astype(np.int64)[:, None]

    def train_loss():
        mnist.eval()
        with paddle.no_grad():
            return float(paddle.nn.CrossEntropyLoss()(mnist(paddle.to_tensor(images)), paddle.to_tensor(labels)))

    before = train_loss()

    # 3.1 模型训练（拆解 Model.prepare、Model.fit）
    # dataset与mnist的定义与使用高层API的内容一致
    # 用 DataLoader 实现数据加载
    train_loader = paddle.io.DataLoader(train_dataset, batch_size=64, shuffle=True)

    # 将mnist模型及其所有子层设置为训练模式。这只会影响某些模块，如Dropout和BatchNorm。
    mnist.train()

    # 设置迭代次数
    epochs = 5

    # 设置优化器
    optim = paddle.optimizer.Adam(parameters=mnist.parameters())
    # 设置损失函数
    loss_fn = paddle.nn.CrossEntropyLoss()
    for epoch in range(epochs):
        for batch_id, data in enumerate(train_loader()):

            x_data = data[0]            # 训练数据
            y_data = data[1]            # 训练数据标签
            predicts = mnist(x_data)    # 预测结果

            # 计算损失 等价于 prepare 中loss的设置
            loss = loss_fn(predicts, y_data)

            # 计算准确率 等价于 prepare 中metrics的设置
            acc = paddle.metric.accuracy(predicts, y_data)

            # 下面的反向传播、打印训练信息、更新参数、梯度清零都被封装到 Model.fit() 中
            # 反向传播
            loss.backward()

            if (batch_id+1) % 900 == 0:
                print("epoch: {}, batch_id: {}, loss is: {}, acc is: {}".format(epoch, batch_id+1, loss.numpy(), acc.numpy()))
            # 更新参数
            optim.step()
            # 梯度清零
            optim.clear_grad()

    after = train_loss()
    assert after < 0.7 * before, (before, after)       # 10 Adam steps fit the 128 training images

    # 3.2 模型评估（拆解 Model.evaluate）
    # 加载测试数据集
    test_loader = paddle.io.DataLoader(test_dataset, batch_size=64, drop_last=True)
    # 设置损失函数
    loss_fn = paddle.nn.CrossEntropyLoss()
    # 将该模型及其所有子层设置为预测模式。这只会影响某些模块，如Dropout和BatchNorm
    mnist.eval()
    # 禁用动态图梯度计算
    for batch_id, data in enumerate(test_loader()):

        x_data = data[0]            # 测试数据
        y_data = data[1]            # 测试数据标签
        predicts = mnist(x_data)    # 预测结果

        # 计算损失与精度
        loss = loss_fn(predicts, y_data)
        acc = paddle.metric.accuracy(predicts, y_data)

        # 打印信息
        if (batch_id+1) % 30 == 0:
            print("batch_id: {}, loss is: {}, acc is: {}".format(batch_id+1, loss.numpy(), acc.numpy()))
    expected_acc = np.mean(np.argmax(predicts.numpy(), axis=1) == y_data.numpy()[:, 0])
    np.testing.assert_allclose(acc.numpy(), expected_acc, rtol=1e-6)

    # 3.3 模型推理（拆解 Model.predict）
    # 加载测试数据集
    test_loader = paddle.io.DataLoader(test_dataset, batch_size=64, drop_last=True)
    # 将该模型及其所有子层设置为预测模式
    mnist.eval()
    for batch_id, data in enumerate(test_loader()):
        # 取出测试数据
        x_data = data[0]
        # 获取预测结果
        predicts = mnist(x_data)
    print("predict finished")

    # 从测试集中取出一组数据
    # (changed: the tutorial calls test_loader().next(), the Python 2 spelling its Paddle 2.2 iterator
    # still had; headrace's DataLoader iterator, like the reference's current one, has __next__ only)
    img, label = next(test_loader())

    # 执行推理并打印结果
    pred_label = mnist(img)[0].argmax()
    # (changed: pred_label[0].item() -> pred_label.item(): argmax over all elements is 0-D, as in
    # the reference since 2.5 - the tutorial ran on 2.2, where it had shape [1])
    print('true label: {}, pred label: {}'.format(label[0].item(), pred_label.item()))
    # 可视化图片
    from matplotlib import pyplot as plt
    plt.imshow(img[0][0])
    # --- end of the tutorial ---

    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "predict finished"
    expected_pred = int(np.argmax(mnist(img).numpy()[0]))
    assert lines[1] == f"true label: {written['test'][1][0]}, pred label: {expected_pred}"
